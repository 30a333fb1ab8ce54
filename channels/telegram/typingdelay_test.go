package telegram

import (
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/channeltest"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// An answer ready within channels.QuickAnswer is sent with no
// sendChatAction before it; a slower one shows "typing…" after the delay.
func TestTypingDelay(t *testing.T) {
	channeltest.TypingDelay(t, func(t *testing.T, after func(time.Duration) <-chan time.Time) channeltest.TypingDelayRig {
		r := newRig(t, func(o *Options) {
			o.TypingDelay = 0 // the default
			o.After = after
		})
		r.fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
		return channeltest.TypingDelayRig{
			Typer:     r.ch,
			Target:    channels.Target{Channel: "telegram", ChatID: "42"},
			Signals:   func() int { return len(r.fake.Requests("sendChatAction")) },
			WaitShown: func(t testing.TB) { r.fake.WaitRequests(t, "sendChatAction", 1, waitLong) },
		}
	})
}
