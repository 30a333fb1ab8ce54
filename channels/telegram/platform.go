package telegram

import (
	"context"
	"time"

	"golang.org/x/time/rate"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/platform"
)

// Config is the channels.telegram section of config.yaml.
type Config struct {
	Enabled       bool            `yaml:"enabled"`
	Token         platform.Secret `yaml:"token"`
	APIURL        string          `yaml:"api_url"` // server root, as bot.WithServerURL takes it
	Mode          string          `yaml:"mode"`    // polling | webhook
	WebhookURL    string          `yaml:"webhook_url"`
	WebhookSecret platform.Secret `yaml:"webhook_secret"`
	EditInterval  time.Duration   `yaml:"edit_interval"`
	MaxMediaBytes int             `yaml:"max_media_bytes"`
	Rate          platform.Rate   `yaml:"rate"` // send pacing
}

// IsEnabled implements platform.Section.
func (c *Config) IsEnabled() bool { return c.Enabled }

// ConfigIn returns the Telegram section of s.
func ConfigIn(s platform.Sections) *Config { return platform.Get[*Config](s, Name) }

// leasePoll is the cluster lease long polling runs under: exactly one
// replica calls getUpdates (webhook mode runs everywhere).
const leasePoll = "telegram-poll"

// Platform describes Telegram to the registry (internal/platforms).
var Platform = platform.Descriptor{
	Name: Name,
	Section: func() platform.Section {
		// Rate: Telegram's documented limit, about one message per second
		// in a chat and 30 per second overall.
		return &Config{Mode: ModePolling, EditInterval: time.Second, MaxMediaBytes: 10 << 20,
			Rate: platform.Rate{PerChat: 1, PerChatBurst: 1, Global: 30, GlobalBurst: 30}}
	},
	EnvDefaults: []platform.EnvDefault{{Key: "token", Env: "TELEGRAM_BOT_TOKEN"}},
	// The webhook secret's usual variable (channels.telegram.webhook_secret:
	// ${TELEGRAM_WEBHOOK_SECRET}); it is no default.
	CredentialEnv: []string{"TELEGRAM_WEBHOOK_SECRET"},
	Validate:      validate,
	New:           newFromConfig,
	Runners:       runners,
	Hint:          "Telegram: your Markdown is converted to Telegram HTML; use bold, italic, code, code blocks, links and simple lists; no tables.",
	// A user's private chat with the bot has the user's id as its chat id.
	DirectChat: func(userID string) (string, bool) { return userID, true },
	Routes:     []platform.Route{{Method: "POST", Path: "/webhooks/telegram"}},
	WebhookMode: func(s platform.Section) string {
		if c := s.(*Config); c.Enabled && c.Mode == ModeWebhook {
			return "channels.telegram.mode: webhook"
		}
		return ""
	},
	Doctor:        []platform.Check{{Name: Name, Net: true, Run: doctorGetMe}},
	WebhookDoctor: doctorWebhook,
}

func validate(s platform.Section, env platform.Env, v *platform.Checker) {
	t := s.(*Config)
	v.OneOf("mode", t.Mode, ModePolling, ModeWebhook)
	v.HTTPURL("api_url", t.APIURL)
	v.HTTPURL("webhook_url", t.WebhookURL)
	v.NonNegativeDur("edit_interval", t.EditInterval)
	v.NonNegative("max_media_bytes", t.MaxMediaBytes)
	v.Rate("rate", t.Rate)
	if !t.Enabled {
		return
	}
	v.Require("token", t.Token.IsSet(), "channels.telegram is enabled")
	if t.Mode == ModeWebhook {
		if t.WebhookURL == "" {
			v.Fail("webhook_url", "is empty: webhook mode needs the public URL Telegram posts updates to")
		}
		if env.Listen == "" {
			v.FailGlobal("server.listen", "is empty: channels.telegram.mode webhook needs the HTTP server")
		}
	}
}

func newFromConfig(_ context.Context, s platform.Section, deps platform.Deps) (channels.Channel, error) {
	c := s.(*Config)
	return New(Options{
		Token: c.Token.Value(), APIURL: c.APIURL, Mode: c.Mode, WebhookURL: c.WebhookURL,
		WebhookSecret: c.WebhookSecret.Value(), EditInterval: c.EditInterval,
		MaxMediaBytes: int64(c.MaxMediaBytes), HTTPClient: deps.HTTPClient, Logger: deps.Logger,
		PerChatRate: sendRate(c.Rate.PerChat), PerChatBurst: c.Rate.PerChatBurst,
		GlobalRate: sendRate(c.Rate.Global), GlobalBurst: c.Rate.GlobalBurst,
	})
}

// runners puts long polling under its lease; webhook mode runs everywhere.
func runners(_ context.Context, s platform.Section, _ platform.Deps, ch channels.Channel) ([]platform.Runner, error) {
	a, ok := ch.(*Adapter)
	if !ok || s.(*Config).Mode == ModeWebhook {
		return nil, nil
	}
	return []platform.Runner{{Lease: leasePoll, Run: a.Run, Ready: a.Ready}}, nil
}

// sendRate turns a configured messages-per-second rate into a limiter rate:
// 0 (no limit) is rate.Inf, which the adapter reads as "unpaced".
func sendRate(perSecond float64) rate.Limit {
	if perSecond <= 0 {
		return rate.Inf
	}
	return rate.Limit(perSecond)
}
