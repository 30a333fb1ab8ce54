package matrix

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakematrix"
)

// An answer ready within channels.QuickAnswer is sent with no typing signal
// before it (not even "typing off"); a slower one shows typing once the
// delay has passed and takes it down at stop.
func TestNoTypingForAQuickAnswer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		quick bool
	}{{"quick", true}, {"slow", false}} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake(t, fakematrix.Options{})
			asked := make(chan time.Duration, 1)
			fire := make(chan time.Time, 1)
			opts := testOptions(fake, nil, &syncBuffer{})
			opts.After = func(d time.Duration) <-chan time.Time {
				asked <- d
				return fire
			}
			a, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			stop := a.StartTyping(context.Background(), channels.Target{Channel: Name, ChatID: dmRoom})
			select {
			case d := <-asked:
				if d != channels.QuickAnswer {
					t.Fatalf("typing waits %v, want %v", d, channels.QuickAnswer)
				}
			case <-time.After(waitLong):
				t.Fatal("typing did not wait")
			}
			if tc.quick {
				stop()
				if n, on := fake.Typing(dmRoom); n != 0 || on {
					t.Fatalf("typing signals %d (on %v) for an answer ready before the delay", n, on)
				}
				if n := len(fake.Requests("typing")); n != 0 {
					t.Fatalf("%d typing requests (want none, not even off)", n)
				}
				return
			}
			fire <- time.Now()
			fake.WaitFor(t, waitLong, "typing on", func() bool { _, on := fake.Typing(dmRoom); return on })
			stop()
			if _, on := fake.Typing(dmRoom); on {
				t.Error("typing still shown after stop returned")
			}
		})
	}
}
