package hub

import "github.com/switchboard-bot/switchboard/channels"

// OperatorCancel makes every turn canceled from now on (at the end of the
// shutdown grace period, or at once with now) count as canceled by the
// operator: its messages are cleared from the inbox instead of being replayed
// at the next start, and the log says so. The daemon calls it when the
// operator interrupts it (Ctrl-C, SIGINT); a plain SIGTERM (a service
// manager's restart) still leaves interrupted turns for replay. now cancels
// the running turns at once (a second Ctrl-C).
func (h *Handler) OperatorCancel(now bool) {
	h.operatorCancel.Store(true)
	if now {
		h.cancelAll()
	}
}

// finishOperatorCanceled clears a turn the operator canceled; on the console
// it says so where the answer would have been.
func (h *Handler) finishOperatorCanceled(batch []item, last channels.Message, turnID string) {
	h.log.Info("turn canceled by the operator; it will not run again", "turn", turnID, "session", last.Target().String())
	if last.Channel == channels.ConsoleChannel {
		if ch, ok := h.Channel(last.Channel); ok {
			if rd, ok := ch.(channels.DeltaWriter); ok {
				rd.ResetDelta(last.Target()) // end a half-streamed line
			}
		}
	}
	h.done(batch)
}
