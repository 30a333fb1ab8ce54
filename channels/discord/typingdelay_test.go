package discord

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
)

// An answer ready within channels.QuickAnswer is sent with no typing call
// before it; a slower one shows the indicator once the delay has passed.
func TestNoTypingForAQuickAnswer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		quick bool
	}{{"quick", true}, {"slow", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := fakediscord.Start(t, fakediscord.Options{Token: testToken})
			fake.AddChannel(guildID, chanID, "general")
			asked := make(chan time.Duration, 1)
			fire := make(chan time.Time, 1)
			ch, _ := newChannel(t, fake, func(o *Options) {
				o.TypingDelay = 0 // the default
				o.After = func(d time.Duration) <-chan time.Time {
					asked <- d
					return fire
				}
			})
			stop := ch.StartTyping(context.Background(), channels.Target{Channel: "discord", ChatID: chanID})
			select {
			case d := <-asked:
				if d != channels.QuickAnswer {
					t.Fatalf("typing waits %v, want %v", d, channels.QuickAnswer)
				}
			case <-time.After(wait):
				t.Fatal("typing did not wait")
			}
			if tc.quick {
				stop() // the answer is out before the delay
				if n := fake.Typing(chanID); n != 0 {
					t.Fatalf("%d typing calls for an answer ready before the delay", n)
				}
				return
			}
			fire <- time.Now()
			fake.WaitTyping(t, chanID, 1, wait)
			stop()
		})
	}
}
