package chaos

import (
	"context"
	"time"
)

// eventWait bounds a wait for one thing a test caused that needs nothing
// else to happen first: an answer, a log line, a metric's change, a
// process's exit. A hang detector, not a performance bound: each takes well
// under a second on a quiet machine and a few on a loaded one (see
// hangAfter, readyWait).
const eventWait = readyWait

// until polls cond every 20 ms until it holds (true) or eventWait passed
// (false, after one last look).
func until(cond func() bool) bool {
	for deadline := time.Now().Add(eventWait); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// arrived waits for ch (true), or eventWait (false).
func arrived[T any](ch <-chan T) bool {
	t := time.NewTimer(eventWait)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// untilProgress polls cond every 20 ms while the rig makes progress: true
// once cond holds, false when eventWait passed without any progress noted
// (cond itself notes progress by calling r.prog.note) or hangAfter passed.
func (r *rig) untilProgress(ctx context.Context, cond func() bool) bool {
	began := time.Now()
	for {
		if cond() {
			return true
		}
		if ctx.Err() != nil || r.prog.since() > eventWait || time.Since(began) > hangAfter {
			return cond()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitReceivedEverywhere waits until the daemon received at least n
// messages on each platform, then checks it (receivedEverywhere): the
// metric counts a message once the daemon took it in, which on a loaded
// machine may be well after it was sent.
func (r *rig) awaitReceivedEverywhere(n float64) {
	r.t.Helper()
	until(func() bool {
		for _, ch := range []string{"telegram", "discord", "slack"} {
			if r.metric("switchboard_messages_in_total", `channel="`+ch+`"`) < n {
				return false
			}
		}
		return true
	})
	r.receivedEverywhere(n)
}
