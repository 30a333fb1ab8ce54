package hub

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/memory"
)

// Claims mode (issue 18): replicas sharing one database. A message may be
// accepted by any replica (webhooks behind a load balancer, Slack spreading
// Socket Mode events), but each session runs at most one turn cluster-wide:
// the replica that holds the session's claim works through the session's
// pending inbox items in id order, reading them from the store, exactly as
// Replay does after a crash (each item decided again; committed turns only
// delivered, with the outbox receipts and the Verifier before a resend).
//
//   - Handle accepts the message, announces the session to the other replicas
//     (Claims.Announce: LISTEN/NOTIFY) and wakes a local worker;
//   - a worker tries the claim once; if another live replica holds it, that
//     replica picks the item up from the store on its next read, and the
//     periodic Sweep covers the race where it had just finished;
//   - the claim is renewed while held; when it is lost (this replica could not
//     renew in time) the running turn is canceled and its items stay pending
//     for the replica that takes the session over;
//   - Sweep (the daemon calls it every lease_ttl/3 and for every NOTIFY) wakes
//     the sessions with pending items; the claim decides who works on them, so
//     a dead replica's sessions are taken over once its claims expire.
//
// Without Claims (one process, bolt) none of this runs: Handle queues in
// memory as before.
//
// Order: two messages of a chat sent within milliseconds may reach two
// replicas (Slack hands consecutive events to different connections) and be
// accepted the other way round. The claimed session's items are taken in the
// platform's order (message timestamps), after a short settle
// (HandlerOptions.ClaimSettle) so a message another replica is accepting
// right then is among them. A message accepted after its successor's turn
// already ran is answered after it: no ordering can undo that.

// DefaultClaimSettle is HandlerOptions.ClaimSettle's default.
const DefaultClaimSettle = 30 * time.Millisecond

// Claims coordinates sessions across replicas (internal/daemon implements it
// on internal/cluster).
type Claims interface {
	// TryClaim takes session's claim if no live replica holds it. held is
	// canceled when the claim is lost; release gives it back.
	TryClaim(ctx context.Context, session string) (held context.Context, release func(), ok bool, err error)
	// Announce tells the other replicas that session has new inbox items.
	Announce(ctx context.Context, session string)
}

// SessionInbox is implemented by stores that can read one session's pending
// items (else InboxPending is filtered).
type SessionInbox interface {
	InboxPendingSession(ctx context.Context, session string) ([]memory.InboxItem, error)
}

// Wake makes this replica look at the pending items of session key (claims mode).
func (h *Handler) Wake(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	s := h.sessions[key]
	if s == nil {
		s = &session{key: key}
		h.sessions[key] = s
	}
	s.wake = true
	if !s.running {
		s.running = true
		h.workers.Add(1)
		go h.workClaimed(s)
		return
	}
	if h.appr.pending[key] != nil || s.cancel != nil {
		// A turn runs here, maybe waiting for /approve: an /approve, /deny
		// or /stop for it may have reached another replica, which stored
		// it and announced the session.
		h.workers.Add(1)
		go func() {
			defer h.workers.Done()
			h.approvalsFromInbox(key)
		}()
	}
}

// waitsForApproval reports whether a turn of session key waits for /approve here.
func (h *Handler) waitsForApproval(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.appr.pending[key] != nil
}

// approvalsFromInbox answers, beside the queue, the /approve and /deny
// commands another replica stored for session key while a turn here waits
// for one (claims mode); each is handled once, and the session's worker skips
// it. A stored /stop cancels the running turn here, as it would on the
// replica that received it.
func (h *Handler) approvalsFromInbox(key string) {
	items, err := h.pendingFor(h.baseCtx, key)
	if err != nil {
		h.log.Warn("read a session's inbox for approvals", "session", key, "err", err)
		return
	}
	for _, in := range items {
		it, keep := h.replayItem(h.baseCtx, in)
		if !keep || it.id == 0 || it.decision != channels.Allow {
			continue
		}
		if isStopTurn(it.msg.Text) {
			h.stopSession(key) // the /stop itself is answered by the session's worker, in order
			continue
		}
		if !isApprovalCommand(commandName(it.msg.Text)) {
			continue
		}
		h.mu.Lock()
		if h.sideHandled[in.ID] {
			h.mu.Unlock()
			continue
		}
		if h.sideHandled == nil {
			h.sideHandled = map[uint64]bool{}
		}
		h.sideHandled[in.ID] = true
		h.mu.Unlock()
		h.handleApprovalCommand(it)
	}
}

// Sweep wakes every session with pending inbox items (claims mode).
func (h *Handler) Sweep(ctx context.Context) error {
	items, err := h.store.InboxPending(ctx)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, it := range items {
		if !seen[it.SessionKey] {
			seen[it.SessionKey] = true
			h.Wake(it.SessionKey)
		}
	}
	return nil
}

// workClaimed is a session's worker in claims mode: while woken, claim the
// session and work through its pending items.
func (h *Handler) workClaimed(s *session) {
	defer h.workers.Done()
	for {
		h.mu.Lock()
		if !s.wake || h.closed {
			s.running = false
			if len(s.queue) == 0 {
				delete(h.sessions, s.key)
			}
			h.mu.Unlock()
			return
		}
		s.wake = false
		h.mu.Unlock()
		held, release, ok, err := h.claims.TryClaim(h.baseCtx, s.key)
		if err != nil {
			h.log.Warn("could not claim a session; the sweep tries again", "session", s.key, "err", err)
			continue
		}
		if !ok {
			continue // another replica works on it
		}
		h.drainClaimed(s, held)
		lost := held.Err() != nil // before release, which ends held too
		release()
		if more, _ := h.pendingFor(h.baseCtx, s.key); len(more) > 0 && !lost {
			h.mu.Lock()
			s.wake = true // arrived while releasing: no other replica may have seen them
			h.mu.Unlock()
		}
	}
}

// drainClaimed processes the session's pending items until none is left that
// this claim has not handled yet, or the claim is lost, or the handler closes.
func (h *Handler) drainClaimed(s *session, held context.Context) {
	h.mu.Lock()
	s.held = held
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		s.held = nil
		h.mu.Unlock()
	}()
	// Let a message of this chat that another replica is accepting right
	// now land first, so the platform's order decides (see queueClaimed).
	if !h.retryWait(held, h.claimSettle) {
		return
	}
	done := map[uint64]bool{}
	for held.Err() == nil && !h.closing() {
		pending, err := h.pendingFor(held, s.key)
		if err != nil {
			h.log.Warn("read a session's inbox", "session", s.key, "err", err)
			h.retryWait(held, time.Second)
			continue
		}
		var fresh []memory.InboxItem
		for _, in := range pending {
			if !done[in.ID] {
				fresh = append(fresh, in)
				done[in.ID] = true
			}
		}
		if len(fresh) == 0 {
			return
		}
		h.queueClaimed(held, s, fresh)
		for {
			h.mu.Lock()
			if len(s.queue) == 0 || held.Err() != nil {
				h.mu.Unlock()
				break
			}
			batch := takeBatch(&s.queue)
			h.mu.Unlock()
			h.process(s, batch)
		}
	}
}

// queueClaimed decides the items again (as Replay does) and queues the kept ones.
func (h *Handler) queueClaimed(ctx context.Context, s *session, items []memory.InboxItem) {
	var drop []uint64
	var kept []item
	for _, in := range items {
		h.mu.Lock()
		side := h.sideHandled[in.ID]
		delete(h.sideHandled, in.ID)
		h.mu.Unlock()
		if side {
			continue // an approval answered beside the queue (approvalsFromInbox)
		}
		it, keep := h.replayItem(ctx, in)
		if !keep {
			drop = append(drop, in.ID)
			continue
		}
		if it.id == 0 {
			continue // cannot decide now: it stays pending
		}
		if it.decision == channels.Allow && isStopTurn(it.msg.Text) {
			h.stopSession(s.key)
		}
		kept = append(kept, it)
	}
	// The platform's order, not the order of acceptance: two messages of a
	// chat may reach two replicas (Slack spreads events over their
	// connections) and be accepted the other way round.
	slices.SortStableFunc(kept, func(a, b item) int {
		if a.msg.Time.IsZero() || b.msg.Time.IsZero() {
			return 0
		}
		return a.msg.Time.Compare(b.msg.Time)
	})
	h.mu.Lock()
	s.queue = append(s.queue, kept...)
	h.mu.Unlock()
	if len(drop) > 0 {
		err := h.store.InboxDone(ctx, drop...)
		h.noteWrite(opClear, err)
	}
}

// pendingFor is session's pending items, oldest first.
func (h *Handler) pendingFor(ctx context.Context, session string) ([]memory.InboxItem, error) {
	if si, ok := h.store.(SessionInbox); ok {
		return si.InboxPendingSession(ctx, session)
	}
	all, err := h.store.InboxPending(ctx)
	if err != nil {
		return nil, err
	}
	var out []memory.InboxItem
	for _, it := range all {
		if it.SessionKey == session {
			out = append(out, it)
		}
	}
	return out, nil
}

// replayItem decodes and decides an inbox item again. keep false: clear it
// (unreadable, or the access policy no longer allows it); a kept item with id
// 0 could not be decided now and stays pending.
func (h *Handler) replayItem(ctx context.Context, in memory.InboxItem) (item, bool) {
	var msg channels.Message
	if err := json.Unmarshal(in.Payload, &msg); err != nil {
		h.log.Error("dropping unreadable inbox item", "id", in.ID, "err", err)
		return item{}, false
	}
	d, err := h.decide(ctx, &msg)
	if err != nil {
		h.log.Error("not replaying an inbox item now: cannot check its sender's access; it stays for the next start",
			"id", in.ID, "err", err)
		return item{}, true
	}
	switch d {
	case channels.Ignore, channels.Deny:
		h.countDropped(msg, d)
		h.log.Info("not replaying a message the access policy no longer allows", "id", in.ID,
			"channel", msg.Channel, "user", msg.UserKey(), "decision", d.String())
		return item{}, false
	}
	it := item{id: in.ID, msg: msg, decision: d, received: in.Received}
	if in.State == memory.InboxAnswered && d == channels.Allow {
		it.answered, it.answer, it.turnID = true, in.Answer, in.TurnID
	}
	return it, true
}

// countDropped counts a message the access policy refuses (d is Ignore or
// Deny) for the stats and the observer.
func (h *Handler) countDropped(msg channels.Message, d channels.Decision) {
	reason := "ignored"
	if d == channels.Deny {
		h.denied.Add(1)
		reason = "denied"
	} else {
		h.ignored.Add(1)
	}
	h.obs.MessageDropped(msg.Channel, reason)
}
