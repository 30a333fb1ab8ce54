package slack

import (
	"context"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/platform"
)

// Config is the channels.slack section of config.yaml.
type Config struct {
	Enabled       bool            `yaml:"enabled"`
	BotToken      platform.Secret `yaml:"bot_token"`
	AppToken      platform.Secret `yaml:"app_token"`
	Mode          string          `yaml:"mode"` // socket | http
	SigningSecret platform.Secret `yaml:"signing_secret"`
	APIURL        string          `yaml:"api_url"` // Web API base ending in /api/
	ThreadReplies bool            `yaml:"thread_replies"`
	EditInterval  time.Duration   `yaml:"edit_interval"`
	MaxMediaBytes int             `yaml:"max_media_bytes"`
}

// IsEnabled implements platform.Section.
func (c *Config) IsEnabled() bool { return c.Enabled }

// ConfigIn returns the Slack section of s.
func ConfigIn(s platform.Sections) *Config { return platform.Get[*Config](s, Name) }

// Platform describes Slack to the registry (internal/platforms).
var Platform = platform.Descriptor{
	Name: Name,
	Section: func() platform.Section {
		return &Config{Mode: "socket", ThreadReplies: true, EditInterval: time.Second, MaxMediaBytes: 10 << 20}
	},
	EnvDefaults: []platform.EnvDefault{
		{Key: "bot_token", Env: "SLACK_BOT_TOKEN"},
		{Key: "app_token", Env: "SLACK_APP_TOKEN"},
		{Key: "signing_secret", Env: "SLACK_SIGNING_SECRET"},
	},
	Validate: validate,
	New: func(_ context.Context, s platform.Section, deps platform.Deps) (channels.Channel, error) {
		c := s.(*Config)
		threads := c.ThreadReplies
		return New(Options{
			BotToken: c.BotToken.Value(), AppToken: c.AppToken.Value(), Mode: c.Mode,
			SigningSecret: c.SigningSecret.Value(), APIURL: c.APIURL, ThreadReplies: &threads,
			EditInterval: c.EditInterval, MaxMediaBytes: int64(c.MaxMediaBytes),
			HTTPClient: deps.HTTPClient, Logger: deps.Logger,
		})
	},
	Hint:   "Slack: your Markdown is converted to Slack mrkdwn; use bold, italic, code, code blocks, links and simple lists; no tables or headings.",
	Routes: []platform.Route{{Method: "POST", Path: "/webhooks/slack/events"}},
	WebhookMode: func(s platform.Section) string {
		if c := s.(*Config); c.Enabled && c.Mode == "http" {
			return "channels.slack.mode: http"
		}
		return ""
	},
	Doctor:        []platform.Check{{Name: Name, Net: true, Run: doctorAuth}},
	WebhookDoctor: doctorWebhook,
}

func validate(s platform.Section, env platform.Env, v *platform.Checker) {
	c := s.(*Config)
	v.OneOf("mode", c.Mode, "socket", "http")
	if c.APIURL != "" {
		if err := v.CheckURL(c.APIURL, "http", "https"); err != nil {
			v.Fail("api_url", "%v", err)
		} else if !strings.HasSuffix(c.APIURL, "/") {
			v.Fail("api_url", "must end with \"/\" (the Web API base, e.g. http://127.0.0.1:9002/api/)")
		}
	}
	v.NonNegativeDur("edit_interval", c.EditInterval)
	v.NonNegative("max_media_bytes", c.MaxMediaBytes)
	if !c.Enabled {
		return
	}
	v.Require("bot_token", c.BotToken.IsSet(), "channels.slack is enabled")
	switch c.Mode {
	case "socket":
		v.Require("app_token", c.AppToken.IsSet(), "channels.slack.mode is socket")
	case "http":
		v.Require("signing_secret", c.SigningSecret.IsSet(), "channels.slack.mode is http")
		if env.Listen == "" {
			v.FailGlobal("server.listen", "is empty: channels.slack.mode http needs the HTTP server")
		}
	}
}
