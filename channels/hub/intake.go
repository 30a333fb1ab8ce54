package hub

import (
	"context"
	"fmt"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/memory"
)

// Handle implements Sink: it filters, deduplicates, checks access, persists
// the message in the inbox and queues it. It never runs a turn inline.
func (h *Handler) Handle(ctx context.Context, msg channels.Message) error {
	h.intake.Add(1) // before received: idle detection reads them in the other order
	defer h.intake.Add(-1)
	h.received.Add(1)
	h.obs.MessageIn(msg.Channel)
	// Decided in a shallow frame: an intake goroutine's stack is small (the
	// collector shrinks it between messages), and deciding under admit's
	// frame made the runtime copy it to a bigger one for every message.
	d, err := h.decide(ctx, &msg)
	if err != nil {
		return err
	}
	return h.admit(ctx, msg, d)
}

// admit persists and queues a message the policy decided d on.
func (h *Handler) admit(ctx context.Context, msg channels.Message, d channels.Decision) error {
	switch d {
	case channels.Ignore:
		h.ignored.Add(1)
		h.obs.MessageDropped(msg.Channel, "ignored")
		return nil
	case channels.Deny:
		h.denied.Add(1)
		h.obs.MessageDropped(msg.Channel, "denied")
		h.log.Info("message from a user who is not allowed", "channel", msg.Channel, "user", msg.UserKey())
		return nil
	}
	key := msg.Target().String()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	if s := h.sessions[key]; s != nil && len(s.queue) >= h.maxQueue {
		h.mu.Unlock()
		h.obs.MessageDropped(msg.Channel, "busy")
		return ErrBusy
	}
	h.mu.Unlock()

	msg, cut := h.caps.capMessage(msg) // before the inbox: nothing longer is ever stored
	if cut {
		h.log.Info("incoming message cut to agent.max_message_chars", "channel", msg.Channel, "user", msg.UserKey())
	}
	payload, err := msg.AppendJSON(make([]byte, 0, 384+len(msg.Text))) // json.Marshal's bytes, no reflection
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	received := h.now()
	id, dup, err := h.store.Accept(ctx, memory.InboxItem{Channel: msg.Channel, MessageID: msg.MessageID,
		SessionKey: key, Payload: payload, Received: received})
	h.noteWrite(opAccept, err)
	if err != nil {
		return fmt.Errorf("persist message: %w", err)
	}
	if dup {
		h.duplicates.Add(1)
		h.obs.MessageDropped(msg.Channel, "duplicate")
		return nil
	}
	it := item{id: id, msg: msg, decision: d, received: received}
	if d == channels.Allow && isApprovalCommand(commandName(msg.Text)) && (h.claims == nil || h.waitsForApproval(key)) &&
		h.handleApprovalCommand(it) {
		return nil // answered beside the queue: the waiting turn holds it (approval.go)
	}
	if d == channels.Allow && isStopTurn(msg.Text) {
		h.stopSession(key)
	}
	if h.claims != nil {
		h.claims.Announce(ctx, key)
		h.Wake(key)
		return nil
	}
	h.enqueue(key, it)
	return nil
}

// decide applies the current access policy and pairing approvals to msg.
func (h *Handler) decide(ctx context.Context, msg *channels.Message) (channels.Decision, error) {
	pol := h.access.Load()
	d := pol.Decide(msg, false)
	if d == channels.NeedsPairing || (d == channels.Deny && pol.Mode == channels.AccessPairing) {
		ok, err := h.pairing.IsApproved(ctx, msg.UserKey())
		if err != nil {
			return d, err
		}
		if ok {
			d = pol.Decide(msg, true)
		}
	}
	return d, nil
}

// Replay queues the inbox items left unfinished by a previous run: committed
// turns are only delivered, the others run again. Every item is decided again
// under the current access policy and pairing approvals, exactly like a new
// message: items now ignored or denied (a user removed from allow_from) are
// cleared without a turn or a delivery; an unpaired stranger's item only gets
// its pairing code, and only once. It returns how many items were queued.
// Call it once at start, after registering channels.
func (h *Handler) Replay(ctx context.Context) (int, error) {
	items, err := h.store.InboxPending(ctx)
	if err != nil {
		return 0, fmt.Errorf("read inbox: %w", err)
	}
	if h.claims != nil {
		return 0, h.Sweep(ctx) // the claims decide which replica replays what
	}
	var drop []uint64
	queued := 0
	for _, in := range items {
		it, keep := h.replayItem(ctx, in)
		if !keep {
			drop = append(drop, in.ID)
			continue
		}
		if it.id == 0 {
			continue
		}
		h.enqueue(in.SessionKey, it)
		queued++
	}
	if len(drop) > 0 {
		err := h.store.InboxDone(ctx, drop...)
		h.noteWrite(opClear, err)
		if err != nil {
			h.log.Error("clear dropped inbox items; they are checked again at the next start", "err", err)
		}
	}
	if queued > 0 {
		h.log.Info("replaying unfinished messages from the inbox", "count", queued)
	}
	return queued, nil
}
