package matrix

import (
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/channeltest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakematrix"
)

// An answer ready within channels.QuickAnswer is sent with no typing signal
// before it (not even "typing off"); a slower one shows typing after the
// delay.
func TestTypingDelay(t *testing.T) {
	channeltest.TypingDelay(t, func(t *testing.T, after func(time.Duration) <-chan time.Time) channeltest.TypingDelayRig {
		fake := newFake(t, fakematrix.Options{})
		opts := testOptions(fake, nil, &syncBuffer{})
		opts.After = after
		a, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		return channeltest.TypingDelayRig{
			Typer:   a,
			Target:  channels.Target{Channel: Name, ChatID: dmRoom},
			Signals: func() int { return len(fake.Requests("typing")) },
			WaitShown: func(t testing.TB) {
				fake.WaitFor(t, waitLong, "typing on", func() bool { _, on := fake.Typing(dmRoom); return on })
			},
		}
	})
}
