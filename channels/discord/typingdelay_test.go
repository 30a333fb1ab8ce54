package discord

import (
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/channeltest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
)

// An answer ready within channels.QuickAnswer is sent with no typing call
// before it; a slower one shows the indicator after the delay.
func TestTypingDelay(t *testing.T) {
	channeltest.TypingDelay(t, func(t *testing.T, after func(time.Duration) <-chan time.Time) channeltest.TypingDelayRig {
		fake := fakediscord.Start(t, fakediscord.Options{Token: testToken})
		fake.AddChannel(guildID, chanID, "general")
		ch, _ := newChannel(t, fake, func(o *Options) {
			o.TypingDelay = 0 // the default
			o.After = after
		})
		return channeltest.TypingDelayRig{
			Typer:     ch,
			Target:    channels.Target{Channel: "discord", ChatID: chanID},
			Signals:   func() int { return fake.Typing(chanID) },
			WaitShown: func(t testing.TB) { fake.WaitTyping(t, chanID, 1, wait) },
		}
	})
}
