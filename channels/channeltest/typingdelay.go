package channeltest

import (
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

// TypingDelayRig is one adapter built for TypingDelay, with after as the
// clock of its typing delay (the adapter's Options.After).
type TypingDelayRig struct {
	Typer  channels.Typer
	Target channels.Target
	// Signals counts the typing calls the platform received for Target
	// (on and off alike).
	Signals func() int
	// WaitShown waits until the platform shows the bot typing in Target.
	WaitShown func(t testing.TB)
}

// TypingDelay checks an adapter that waits channels.QuickAnswer before it
// shows typing: StartTyping asks its clock for that delay; a turn over
// before it passed (stop) sent no typing call at all, not even "typing
// off"; a slower one shows typing once the delay has passed. build makes a
// fresh adapter and fake platform for each case.
func TypingDelay(t *testing.T, build func(t *testing.T, after func(time.Duration) <-chan time.Time) TypingDelayRig) {
	for _, quick := range []bool{true, false} {
		name := map[bool]string{true: "quick", false: "slow"}[quick]
		t.Run(name, func(t *testing.T) {
			asked := make(chan time.Duration, 1)
			fire := make(chan time.Time, 1)
			r := build(t, func(d time.Duration) <-chan time.Time {
				asked <- d
				return fire
			})
			stop := r.Typer.StartTyping(t.Context(), r.Target)
			defer stop()
			select {
			case d := <-asked:
				if d != channels.QuickAnswer {
					t.Fatalf("typing waits %v, want channels.QuickAnswer (%v)", d, channels.QuickAnswer)
				}
			case <-time.After(Timeout):
				t.Fatal("StartTyping did not wait before showing typing")
			}
			if quick {
				stopWithin(t, stop) // the answer is out before the delay
				if n := r.Signals(); n != 0 {
					t.Fatalf("%d typing call(s) for a turn over before the delay", n)
				}
				return
			}
			fire <- time.Now()
			r.WaitShown(t)
		})
	}
}
