package hub

import "github.com/switchboard-bot/switchboard/channels"

// recheckAccess decides the queued items of batch again under the current
// access policy and pairing approvals when their turn (or command) comes: a
// message admitted while its sender was allowed waits in the queue behind a
// running turn, and a config reload in between may have removed the sender
// (allow_from, mode). Items now ignored or denied are finished without a
// turn or a reply, like a new message of the sender's would be; items now
// needing pairing get the sender's pairing code (once) instead of a turn.
// It returns the items still allowed, in order. A turn already running
// finishes. Replayed answers (a committed turn, delivery only) were decided
// at replay and pass unchanged; when the check itself fails (store error)
// an item keeps the decision it was queued with.
func (h *Handler) recheckAccess(s *session, batch []item) []item {
	kept := batch[:0:0]
	for i := range batch {
		// By index, the rare paths in functions of their own: a fresh
		// worker's stack is small, and a big frame here made the runtime
		// copy it to a bigger one for every message (see Handle).
		if h.stillAllowed(s, &batch[i]) {
			kept = append(kept, batch[i])
		}
	}
	return kept
}

// stillAllowed decides a queued item again; false when it was handed to
// pairing or dropped.
func (h *Handler) stillAllowed(s *session, it *item) bool {
	if it.answered || it.decision != channels.Allow {
		return true
	}
	d, err := h.decide(h.baseCtx, &it.msg)
	switch {
	case err != nil:
		h.recheckFailed(it, err)
		return true
	case d == channels.Allow:
		return true
	}
	h.recheckRefused(s, it, d)
	return false
}

func (h *Handler) recheckFailed(it *item, err error) {
	h.log.Warn("cannot check a queued message's access again; it keeps the decision it was queued with",
		"channel", it.msg.Channel, "user", it.msg.UserKey(), "err", err)
}

// recheckRefused handles a queued message the policy no longer allows:
// pairing, or dropped.
func (h *Handler) recheckRefused(s *session, it *item, d channels.Decision) {
	if d == channels.NeedsPairing {
		it.decision = d
		h.pair(s, *it)
		return
	}
	h.countDropped(it.msg, d)
	h.log.Info("dropping a queued message: the access policy no longer allows its sender",
		"channel", it.msg.Channel, "user", it.msg.UserKey(), "decision", d.String())
	h.done([]item{*it})
}
