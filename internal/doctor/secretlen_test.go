package doctor

import (
	"github.com/switchboard-bot/switchboard/channels/telegram"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/config"
)

// Telegram's setWebhook takes a secret_token of 1–256 characters of
// A-Z a-z 0-9 _ -; doctor says so before Telegram refuses it.
func TestTelegramWebhookSecretRule(t *testing.T) {
	tests := []struct {
		name   string
		secret string
		want   Status
	}{
		{"256 characters", strings.Repeat("a", 256), StatusOK},
		{"257 characters", strings.Repeat("a", 257), StatusFail},
		{"a space", "abc def", StatusFail},
		{"hex", "0123456789abcdef_-XYZ", StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			tg := telegram.ConfigIn(cfg.Channels)
			tg.Enabled, tg.Mode, tg.WebhookURL = true, "webhook", "https://bot.example.com/telegram"
			tg.WebhookSecret = config.NewSecret(tt.secret)
			res := (&doctor{cfg: cfg}).checkWebhooks()
			if res.Status != tt.want {
				t.Fatalf("status %s (%s), want %s", res.Status, res.Finding, tt.want)
			}
		})
	}
}
