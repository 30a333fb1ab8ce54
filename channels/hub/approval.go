package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/outbound"
)

// Approval in chat (issue 16). A chat turn whose tool call needs a person's
// approval (agent.ApprovalPolicy) pauses: the chat gets one message naming
// the tool with a bounded summary of its arguments, and the turn waits for
// /approve or /deny from the user whose message started the turn, or from an
// admin. No answer within the approval timeout denies the call, as do /stop
// (the turn is canceled) and shutdown. Every request and decision is audited
// (actions approval.request, approval.approve, approval.deny,
// approval.timeout, approval.cancel, approval.refused).
//
// The waiting turn holds its session's worker, so Handle answers /approve and
// /deny at once, beside the session's queue (like /stop cancels beside it).
// There is at most one pending approval per session: a turn's tool calls are
// approved one after the other.

// DefaultApprovalTimeout is how long a call waits for /approve or /deny.
const DefaultApprovalTimeout = 5 * time.Minute

// ErrApprovalPending is returned when a session already has a call waiting
// for approval.
var ErrApprovalPending = errors.New("another tool call is already waiting for approval in this chat")

// pendingApproval is a tool call waiting for /approve or /deny in a session.
type pendingApproval struct {
	requester     string // the user key who may decide (besides admins)
	requesterName string
	tool          string
	detail        string // tool and argument summary, for the audit
	decide        chan approvalDecision
}

type approvalDecision struct {
	ok     bool
	actor  string // user key of who decided
	name   string // their display name
	reason string // set when no person decided (shutdown)
}

// approvalState is the handler's pending approvals, by session key (guarded
// by Handler.mu), and the timeout.
type approvalState struct {
	pending map[string]*pendingApproval
	timeout atomic.Int64 // time.Duration; <= 0 = DefaultApprovalTimeout
}

func isApprovalCommand(name string) bool { return name == "approve" || name == "deny" }

// SetApprovalTimeout changes how long calls wait for approval (config reload);
// d <= 0 means DefaultApprovalTimeout.
func (h *Handler) SetApprovalTimeout(d time.Duration) { h.appr.timeout.Store(int64(d)) }

func (h *Handler) approvalTimeout() time.Duration {
	if d := time.Duration(h.appr.timeout.Load()); d > 0 {
		return d
	}
	return DefaultApprovalTimeout
}

// PendingApproval reports the tool waiting for approval in session key, if any.
func (h *Handler) PendingApproval(key string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.appr.pending[key]
	if p == nil {
		return "", false
	}
	return p.tool, true
}

// asker returns the agent.Asker of a turn in target started by starter.
func (h *Handler) asker(target channels.Target, starter channels.Message) agent.Asker {
	return func(ctx context.Context, req agent.ApprovalRequest) error {
		return h.askApproval(ctx, target, starter, req)
	}
}

// askApproval asks the chat to approve req and waits for the decision, the
// timeout, or the end of ctx (/stop, shutdown).
func (h *Handler) askApproval(ctx context.Context, target channels.Target, starter channels.Message, req agent.ApprovalRequest) error {
	key := target.String()
	name := req.Call.Name
	p := &pendingApproval{requester: starter.UserKey(), requesterName: starter.Sender.Name, tool: name,
		detail: name + " " + req.ArgsSummary(), decide: make(chan approvalDecision, 1)}
	h.mu.Lock()
	if h.appr.pending[key] != nil || h.closed {
		closed := h.closed
		h.mu.Unlock()
		if closed {
			h.audit(p.requester, "approval.cancel", key, p.detail, "shutting down")
			return fmt.Errorf("%s needs approval, but the bot is shutting down; it was not run", name)
		}
		h.audit(p.requester, "approval.deny", key, p.detail, ErrApprovalPending.Error())
		return fmt.Errorf("%s was not run: %w", name, ErrApprovalPending)
	}
	if h.appr.pending == nil {
		h.appr.pending = map[string]*pendingApproval{}
	}
	h.appr.pending[key] = p
	h.mu.Unlock()

	timeout := h.approvalTimeout()
	h.audit(p.requester, "approval.request", key, p.detail, "")
	d := outbound.Delivery{Target: target, ReplyTo: replyTo(starter), Markdown: approvalText(req, starter, timeout)}
	ch, ok := h.Channel(target.Channel)
	var err error
	if !ok {
		err = fmt.Errorf("channel %q is not running", target.Channel)
	} else {
		_, err = h.out.Deliver(ctx, ch, d)
	}
	if err != nil && h.claimApproval(key, p) {
		h.log.Error("ask for approval", "session", key, "tool", name, "err", err)
		h.audit("system", "approval.deny", key, p.detail, "could not ask in the chat: "+err.Error())
		return fmt.Errorf("%s needs approval, but the request could not be shown in the chat; it was not run", name)
	}
	// Waiting for a person is not work: free the turn's concurrency slot
	// meanwhile (runCommitted holds it around the turn), take it back after.
	<-h.sem
	defer func() { h.sem <- struct{}{} }()
	return h.awaitApproval(ctx, key, p, timeout)
}

// awaitApproval waits for p's decision. A decision claims p under h.mu before
// it is sent, so a timeout or cancellation that finds p claimed still takes
// that decision: the user's "Approved." is never contradicted.
func (h *Handler) awaitApproval(ctx context.Context, key string, p *pendingApproval, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var d approvalDecision
	select {
	case d = <-p.decide:
	case <-timer.C:
		if h.claimApproval(key, p) {
			h.audit("system", "approval.timeout", key, p.detail, "no answer within "+timeout.String())
			return fmt.Errorf("nobody approved %s within %s, so it was not run", p.tool, timeout)
		}
		d = <-p.decide
	case <-ctx.Done():
		if h.claimApproval(key, p) {
			h.audit("system", "approval.cancel", key, p.detail, ctx.Err().Error())
			return fmt.Errorf("the wait for approval of %s ended (%w); it was not run", p.tool, ctx.Err())
		}
		d = <-p.decide
	}
	switch {
	case d.ok:
		h.audit(d.actor, "approval.approve", key, p.detail, "")
		return nil
	case d.reason != "":
		h.audit(d.actor, "approval.cancel", key, p.detail, d.reason)
		return fmt.Errorf("the wait for approval of %s ended (%s); it was not run", p.tool, d.reason)
	}
	h.audit(d.actor, "approval.deny", key, p.detail, "")
	who := d.name
	if who == "" {
		who = "the user"
	}
	return fmt.Errorf("%s denied the call of %s, so it was not run", who, p.tool)
}

// claimApproval removes p from the pending approvals if it is still there,
// and reports whether it was.
func (h *Handler) claimApproval(key string, p *pendingApproval) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.appr.pending[key] != p {
		return false
	}
	delete(h.appr.pending, key)
	return true
}

// denyAllApprovals denies every pending approval (shutdown).
func (h *Handler) denyAllApprovals(reason string) {
	h.mu.Lock()
	pend := h.appr.pending
	h.appr.pending = nil
	h.mu.Unlock()
	for _, p := range pend {
		p.decide <- approvalDecision{actor: "system", reason: reason}
	}
}

// approvalCommand answers /approve and /deny: it resolves the session's
// pending approval if the sender may decide it.
func (h *Handler) approvalCommand(it item) {
	msg := it.msg
	name := commandName(msg.Text)
	key := msg.Target().String()
	h.mu.Lock()
	p := h.appr.pending[key]
	if p == nil {
		h.mu.Unlock()
		h.reply(it, "Nothing is waiting for approval here.")
		return
	}
	if pol := h.Access(); msg.UserKey() != p.requester && !pol.IsAdmin(&msg) {
		h.mu.Unlock()
		h.audit(msg.UserKey(), "approval.refused", key, "/"+name+" "+p.detail,
			"not the user who started the turn, nor an admin")
		who := p.requesterName
		if who == "" {
			who = "the user who asked"
		}
		h.reply(it, fmt.Sprintf("Sorry, only %s or an admin can decide this.", who))
		return
	}
	delete(h.appr.pending, key)
	h.mu.Unlock()
	p.decide <- approvalDecision{ok: name == "approve", actor: msg.UserKey(), name: msg.Sender.Name}
	if name == "approve" {
		h.reply(it, "Approved: running "+codeSpan(p.tool)+".")
	} else {
		h.reply(it, "Denied: "+codeSpan(p.tool)+" will not run.")
	}
}

// handleApprovalCommand runs /approve or /deny beside the session's queue
// (the waiting turn holds the session's worker). It reports false when the
// handler is closing.
func (h *Handler) handleApprovalCommand(it item) bool {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return false
	}
	h.workers.Add(1)
	h.mu.Unlock()
	h.commands.Add(1)
	go func() {
		defer h.workers.Done()
		h.approvalCommand(it)
	}()
	return true
}

// approvalText is the message asking for approval. The tool name and the
// argument summary are code, so nothing in them renders as markup.
func approvalText(req agent.ApprovalRequest, starter channels.Message, timeout time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Approval needed: I want to run %s (%s).\n\n", codeSpan(req.Call.Name), req.Reason)
	b.WriteString(codeBlock(req.ArgsSummary()))
	b.WriteString("\n\nReply /approve to run it or /deny to refuse")
	if !starter.Direct && starter.Sender.Name != "" {
		b.WriteString(" (" + starter.Sender.Name + " or an admin)")
	}
	fmt.Fprintf(&b, ". Without an answer within %s it is refused.", timeout)
	return b.String()
}

// longestRun returns the longest run of c in s.
func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// codeSpan renders s (one line) as an inline code span.
func codeSpan(s string) string {
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// codeBlock renders s (one line) as a fenced code block no content can close.
func codeBlock(s string) string {
	fence := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	return fence + "\n" + s + "\n" + fence
}
