package matrix

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels/platform"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakematrix"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string // keys with problems
	}{
		{"disabled defaults", Config{}, nil},
		{"enabled without homeserver or token", Config{Enabled: true}, []string{"homeserver", "access_token"}},
		{"bad homeserver and user", Config{Homeserver: "matrix.example.org", UserID: "bot"}, []string{"homeserver", "user_id"}},
		{"encryption refused", Config{Encryption: true}, []string{"encryption"}},
		{"complete", Config{Enabled: true, Homeserver: "https://matrix.example.org", UserID: "@bot:example.org",
			AccessToken: platform.NewSecret("t")}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c platform.Checker
			cfg := tc.cfg
			validate(&cfg, platform.Env{}, &c)
			var keys []string
			for _, p := range c.Problems {
				keys = append(keys, p.Key)
			}
			if strings.Join(keys, ",") != strings.Join(tc.want, ",") {
				t.Errorf("problems at %q, want %q: %+v", keys, tc.want, c.Problems)
			}
		})
	}
}

func TestDoctor(t *testing.T) {
	fake := fakematrix.New(t, fakematrix.Options{})
	run := func(cfg Config) platform.CheckResult {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return doctorWhoami(ctx, &cfg, platform.Deps{Timeout: 10 * time.Second})
	}
	good := Config{Enabled: true, Homeserver: fake.URL(), AccessToken: platform.NewSecret(fake.Token())}
	tests := []struct {
		name    string
		mutate  func(c *Config)
		status  string
		finding string
	}{
		{"ok", func(*Config) {}, platform.StatusOK, "the token belongs to " + fake.UserID()},
		{"wrong token", func(c *Config) { c.AccessToken = platform.NewSecret("syt_nope") }, platform.StatusFail, "rejected the access token"},
		{"other account", func(c *Config) { c.UserID = "@other:fake.test" }, platform.StatusFail, "but the token belongs to " + fake.UserID()},
		{"other device", func(c *Config) { c.DeviceID = "OTHER" }, platform.StatusFail, "belongs to device " + fakematrix.DefaultDeviceID},
		{"nothing listening", func(c *Config) { c.Homeserver = "http://127.0.0.1:1" }, platform.StatusFail, "connection refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.mutate(&cfg)
			r := run(cfg)
			if r.Status != tc.status || !strings.Contains(r.Finding, tc.finding) {
				t.Errorf("doctor = %+v, want %s with %q", r, tc.status, tc.finding)
			}
			if strings.Contains(r.Finding+r.Fix, fake.Token()) {
				t.Errorf("the token appears in the result: %+v", r)
			}
		})
	}
}
