package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/telegram"
	"github.com/switchboard-bot/switchboard/internal/config"
)

// channels.telegram.rate reaches the adapter: the number of send slots one
// chat gets at once follows the configured rate and burst. (A limiter
// refuses at once a wait longer than the context's deadline, so nothing here
// sleeps or measures time.)
func TestTelegramRateFromConfigPacesSends(t *testing.T) {
	cases := []struct {
		name  string
		rate  config.Rate
		slots int // send slots one chat gets at once (-1: unlimited)
	}{
		{"default (Telegram's limits)", telegram.ConfigIn(config.Default().Channels).Rate, 1},
		{"slower with a burst", config.Rate{PerChat: 0.001, PerChatBurst: 3, Global: 30, GlobalBurst: 30}, 3},
		{"global limit binds", config.Rate{PerChat: 0, PerChatBurst: 1, Global: 0.001, GlobalBurst: 2}, 2},
		{"no limit", config.Rate{PerChat: 0, PerChatBurst: 1, Global: 0, GlobalBurst: 1}, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			telegram.ConfigIn(cfg.Channels).Enabled = true
			telegram.ConfigIn(cfg.Channels).Token = config.NewSecret("123:test-token")
			telegram.ConfigIn(cfg.Channels).Rate = tc.rate
			ch, err := (&Daemon{}).buildPlatform(context.Background(), cfg, "telegram")
			if err != nil {
				t.Fatal(err)
			}
			tg := ch.(*telegram.Adapter)
			target := channels.Target{Channel: "telegram", ChatID: "42"}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			got := 0
			for got < 100 && tg.WaitSendSlot(ctx, target) == nil {
				got++
			}
			want := tc.slots
			if want < 0 {
				want = 100
			}
			if got != want {
				t.Fatalf("one chat got %d send slots at once, want %d", got, want)
			}
		})
	}
}
