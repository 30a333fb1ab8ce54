package telegram

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// An answer ready within TypingDelay is sent with no "typing…" before it:
// one Bot API call fewer for a command or a quick model's reply. A slower
// one shows the indicator once the delay has passed.
func TestNoTypingForAQuickAnswer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		quick bool
	}{{"quick", true}, {"slow", false}} {
		t.Run(tc.name, func(t *testing.T) {
			asked := make(chan time.Duration, 1)
			fire := make(chan time.Time, 1)
			r := newRig(t, func(o *Options) {
				o.TypingDelay = 0 // the default
				o.After = func(d time.Duration) <-chan time.Time {
					asked <- d
					return fire
				}
			})
			r.fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
			stop := r.ch.StartTyping(context.Background(), channels.Target{Channel: "telegram", ChatID: "42"})
			select {
			case d := <-asked:
				if d != DefaultTypingDelay {
					t.Fatalf("typing waits %v, want %v", d, DefaultTypingDelay)
				}
			case <-time.After(waitLong):
				t.Fatal("typing did not wait")
			}
			if tc.quick {
				stop() // the answer is out: the turn ends before the delay
				if n := len(r.fake.Requests("sendChatAction")); n != 0 {
					t.Fatalf("%d sendChatAction for an answer ready before the delay", n)
				}
				return
			}
			fire <- time.Now()
			r.fake.WaitRequests(t, "sendChatAction", 1, waitLong)
			stop()
		})
	}
}
