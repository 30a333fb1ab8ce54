package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/internal/config"
)

// Issue 13/14: a channel's last error can carry the URL it failed on, with
// a token in its query or user info; /status and `switchboard status` show
// the error with the credentials redacted.
func TestStatusLastErrorRedactsURLs(t *testing.T) {
	const secret = "SECRET-chan-9931"
	cfg := config.Default()
	cfg.Bot.DataDir, cfg.Personas.Dir = t.TempDir(), t.TempDir()
	console.ConfigIn(cfg.Channels).Enabled = false
	cfg.Server.Listen = ""
	d, err := New(context.Background(), Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	for name, cause := range map[string]error{
		"query":     &url.Error{Op: "Get", URL: "https://chat.example/api/connect?token=" + secret + "&v=2", Err: errors.New("connection refused")},
		"user info": fmt.Errorf("dial: %w", &url.Error{Op: "Get", URL: "wss://bot:" + secret + "@gw.example/ws", Err: errors.New("EOF")}),
	} {
		d.mu.Lock()
		d.sups[name] = &supervisor{restarts: 2, lastErr: cause}
		d.mu.Unlock()
	}
	facts := d.statusFacts(context.Background())
	if strings.Contains(facts, secret) {
		t.Fatalf("/status shows the secret:\n%s", facts)
	}
	for _, want := range []string{
		`channel query: not connected (2 restarts, last error: Get "https://chat.example/api/connect?token=[redacted]&v=2": connection refused)`,
		`channel user info: not connected (2 restarts, last error: dial: Get "wss://bot:[redacted]@gw.example/ws": EOF)`,
	} {
		if !strings.Contains(facts, want) {
			t.Errorf("/status lacks %q:\n%s", want, facts)
		}
	}
}
