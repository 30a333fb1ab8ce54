package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/switchboard-bot/switchboard/channels/discord"
	"github.com/switchboard-bot/switchboard/channels/slack"
	"github.com/switchboard-bot/switchboard/channels/telegram"
)

const distinct = "SB-SECRET-7f3a9c1e-do-not-print"

// secretEnv gives every secret key the distinctive value.
var secretEnv = envOf(map[string]string{
	"OPENAI_API_KEY": distinct + "-openai", "TELEGRAM_BOT_TOKEN": distinct + "-tg",
	"DISCORD_BOT_TOKEN": distinct + "-dc", "SLACK_BOT_TOKEN": distinct + "-xoxb",
	"SLACK_APP_TOKEN": distinct + "-xapp", "SLACK_SIGNING_SECRET": distinct + "-sig",
	"TG_HOOK": distinct + "-hook", "ADMIN": distinct + "-admin",
})

const allSecretsYAML = `
channels:
  telegram: {enabled: true, webhook_secret: "${TG_HOOK}"}
  discord: {enabled: true}
  slack: {enabled: true}
server:
  admin_token: ${ADMIN}
`

var secretKeys = []string{"llm.api_key", "channels.telegram.token", "channels.telegram.webhook_secret", "channels.discord.token",
	"channels.slack.bot_token", "channels.slack.app_token", "channels.slack.signing_secret", "server.admin_token"}

func TestSecretsNeverRendered(t *testing.T) {
	c := mustParse(t, allSecretsYAML, secretEnv)
	// Control: the secrets are really there, so the scans below can fail.
	for _, s := range []Secret{c.LLM.APIKey, telegram.ConfigIn(c.Channels).Token, telegram.ConfigIn(c.Channels).WebhookSecret, discord.ConfigIn(c.Channels).Token,
		slack.ConfigIn(c.Channels).BotToken, slack.ConfigIn(c.Channels).AppToken, slack.ConfigIn(c.Channels).SigningSecret, c.Server.AdminToken} {
		if !strings.HasPrefix(s.Value(), distinct) || !s.IsSet() {
			t.Fatalf("secret not loaded: set=%v", s.IsSet())
		}
	}

	renderings := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		renderings["fmt "+verb+" config"] = fmt.Sprintf(verb, *c)
		renderings["fmt "+verb+" *config"] = fmt.Sprintf(verb, c)
		renderings["fmt "+verb+" secret"] = fmt.Sprintf(verb, c.LLM.APIKey)
		renderings["fmt "+verb+" section"] = fmt.Sprintf(verb, c.Channels)
	}
	renderings["String"] = slack.ConfigIn(c.Channels).AppToken.String()
	renderings["GoString"] = slack.ConfigIn(c.Channels).AppToken.GoString()
	renderings["Sprint"] = fmt.Sprint(telegram.ConfigIn(c.Channels), c.Server)
	renderings["Println"] = fmt.Sprintln(discord.ConfigIn(c.Channels))

	j, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	renderings["json.Marshal"] = string(j)
	js, _ := json.Marshal(slack.ConfigIn(c.Channels).SigningSecret)
	renderings["json secret"] = string(js)
	y, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	renderings["yaml.Marshal"] = string(y)
	ry, _ := c.RedactedYAML()
	renderings["RedactedYAML"] = string(ry)
	renderings["Redacted"] = fmt.Sprintf("%#v", c.Redacted())
	txt, _ := c.LLM.APIKey.MarshalText()
	renderings["MarshalText"] = string(txt)

	for _, h := range []struct {
		name string
		mk   func(*bytes.Buffer) slog.Handler
	}{
		{"slog text", func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) }},
		{"slog json", func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) }},
	} {
		var b bytes.Buffer
		log := slog.New(h.mk(&b))
		log.Info("loaded", "config", c, "cfgval", *c, "token", telegram.ConfigIn(c.Channels).Token, "telegram", telegram.ConfigIn(c.Channels),
			slog.Any("slack", slack.ConfigIn(c.Channels)), slog.Any("key", c.LLM.APIKey))
		log.With("llm", c.LLM).Error("failed", "err", fmt.Errorf("wrapped: %v", discord.ConfigIn(c.Channels)))
		renderings[h.name] = b.String()
	}

	for _, k := range secretKeys {
		v, err := Get(c, k)
		if err != nil {
			t.Fatal(err)
		}
		if v != "[redacted]" {
			t.Errorf("Get(%s) = %q, want [redacted]", k, v)
		}
		renderings["Get "+k] = v
	}
	for _, section := range []string{"llm", "channels", "channels.slack", "server"} {
		v, _ := Get(c, section)
		renderings["Get "+section] = v
	}

	// Error strings produced while secrets are loaded.
	errCases := map[string]string{
		"validation errors next to secrets": allSecretsYAML + "llm:\n  tool_protocol: xml\n  api_key: " + distinct + "\n",
		"bad reference in a secret":         "channels:\n  telegram:\n    token: " + distinct + "${oops\n",
		"secret env var in an int field":    "agent:\n  max_history: ${OPENAI_API_KEY}\n",
		"secret env var in a duration":      "llm:\n  timeout: ${TELEGRAM_BOT_TOKEN}\n",
		"secret env var in an enum":         "log:\n  level: ${SLACK_BOT_TOKEN}\n",
		"secret env var in a URL":           "llm:\n  base_url: ${DISCORD_BOT_TOKEN}\n",
		"secret in URL userinfo":            "llm:\n  base_url: \"ftp://u:" + distinct + "@h/v1\"\n",
	}
	for name, y := range errCases {
		_, err := Parse("config.yaml", []byte(y), secretEnv)
		if err == nil {
			// Enum/URL fields holding a secret are expected to fail
			// validation; if they did not, the case proves nothing.
			t.Errorf("%s: no error", name)
			continue
		}
		renderings["error: "+name] = err.Error()
	}
	// SetInFile refusing an edit in a file that holds a literal secret.
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("channels:\n  telegram:\n    enabled: true\n    token: "+distinct+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := SetInFile(path, "channels.telegram.mode", "webhook"); err == nil {
		t.Error("webhook without url accepted")
	} else {
		renderings["SetInFile error"] = err.Error()
	}

	for name, out := range renderings {
		if strings.Contains(out, distinct) || strings.Contains(out, "7f3a9c1e") {
			t.Errorf("%s leaks the secret:\n%s", name, out)
		}
	}
	if !strings.Contains(renderings["slog json"], `"token":"[redacted]"`) {
		t.Errorf("slog json does not show the redacted form:\n%s", renderings["slog json"])
	}
	if !strings.Contains(renderings["json.Marshal"], `"APIKey":"[redacted]"`) {
		t.Errorf("json:\n%s", renderings["json.Marshal"])
	}
}

func TestSecretRendering(t *testing.T) {
	var empty Secret
	set := NewSecret("x")
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"set %v", fmt.Sprintf("%v", set), "[redacted]"},
		{"set %#v", fmt.Sprintf("%#v", set), `platform.Secret("[redacted]")`},
		{"set %q", fmt.Sprintf("%q", set), `"[redacted]"`},
		{"empty %v", fmt.Sprintf("%v", empty), ""},
		{"empty String", empty.String(), ""},
		{"empty json", func() string { b, _ := json.Marshal(empty); return string(b) }(), `""`},
		{"set json", func() string { b, _ := json.Marshal(set); return string(b) }(), `"[redacted]"`},
		{"set yaml", func() string { b, _ := yaml.Marshal(set); return string(b) }(), "'[redacted]'\n"},
		{"set slog", set.LogValue().String(), "[redacted]"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	if empty.IsSet() || !set.IsSet() || set.Value() != "x" {
		t.Error("IsSet/Value")
	}
}
