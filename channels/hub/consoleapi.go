package hub

import (
	"context"
	"errors"
	"sort"
	"strings"

	"github.com/switchboard-bot/switchboard/channels"
)

// What the web console (internal/ui, through internal/daemon) needs beyond
// the chat commands: deny a pairing code, and list and decide the tool calls
// waiting for approval, as an admin's /approve or /deny in the chat would.

// ErrNoApproval means nothing is waiting for approval in the session.
var ErrNoApproval = errors.New("nothing is waiting for approval in this chat")

// Deny removes a pending code without approving its user (they may ask again).
func (p *Pairing) Deny(ctx context.Context, code string) (PairingRequest, error) {
	code = strings.ToUpper(strings.TrimSpace(code))
	p.mu.Lock()
	defer p.mu.Unlock()
	pending, err := p.load(ctx)
	if err != nil {
		return PairingRequest{}, err
	}
	for i, r := range pending {
		if r.Code == code {
			pending = append(pending[:i], pending[i+1:]...)
			return r, p.save(ctx, pending)
		}
	}
	return PairingRequest{}, ErrUnknownCode
}

// DenyPairing denies code on behalf of actor and audits the decision.
func (h *Handler) DenyPairing(ctx context.Context, actor, code string) (PairingRequest, error) {
	req, err := h.pairing.Deny(ctx, code)
	if err != nil {
		h.audit(actor, "pairing.deny", "", "code "+strings.ToUpper(strings.TrimSpace(code)), err.Error())
		return req, err
	}
	h.audit(actor, "pairing.deny", "", "denied "+req.User, "")
	return req, nil
}

// WaitingApproval is a tool call waiting for /approve or /deny.
type WaitingApproval struct {
	Session string // target address of the chat
	Tool    string
	Detail  string // tool and argument summary
	User    string // who may decide besides admins
}

// PendingApprovals lists the calls waiting for approval, by session.
func (h *Handler) PendingApprovals() []WaitingApproval {
	h.mu.Lock()
	out := make([]WaitingApproval, 0, len(h.appr.pending))
	for key, p := range h.appr.pending {
		out = append(out, WaitingApproval{Session: key, Tool: p.tool, Detail: p.detail, User: p.requesterName})
	}
	h.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Session < out[j].Session })
	return out
}

// DecideApproval approves or denies the call waiting in session on behalf of
// actor (an operator of the web console, who is an admin) and tells the chat.
func (h *Handler) DecideApproval(ctx context.Context, session string, approve bool, actor string) error {
	h.mu.Lock()
	p := h.appr.pending[session]
	if p == nil {
		h.mu.Unlock()
		return ErrNoApproval
	}
	delete(h.appr.pending, session)
	h.mu.Unlock()
	p.decide <- approvalDecision{ok: approve, actor: actor, name: "an operator"}
	text := "Denied by an operator: " + codeSpan(p.tool) + " will not run."
	if approve {
		text = "Approved by an operator: running " + codeSpan(p.tool) + "."
	}
	if t, ok := channels.ParseTarget(session); ok {
		if _, err := h.Deliver(ctx, t, "", text); err != nil {
			h.log.Warn("tell the chat about an approval decision", "session", session, "err", err)
		}
	}
	return nil
}
