package matrix

import (
	"context"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/platform"
)

// Config is the channels.matrix section of config.yaml.
type Config struct {
	Enabled     bool            `yaml:"enabled"`
	Homeserver  string          `yaml:"homeserver"` // client-server base, https://matrix.example.org
	UserID      string          `yaml:"user_id"`    // @bot:example.org; empty = the token's
	AccessToken platform.Secret `yaml:"access_token"`
	DeviceID    string          `yaml:"device_id"`
	Encryption  bool            `yaml:"encryption"` // end-to-end encryption: not supported yet
}

// IsEnabled implements platform.Section.
func (c *Config) IsEnabled() bool { return c.Enabled }

// ConfigIn returns the Matrix section of s.
func ConfigIn(s platform.Sections) *Config { return platform.Get[*Config](s, Name) }

// leaseSync is the cluster lease the /sync loop runs under: exactly one
// replica syncs (the since token is the account's, not the replica's).
const leaseSync = "matrix-sync"

// Platform describes Matrix to the registry (internal/platforms).
var Platform = platform.Descriptor{
	Name:        Name,
	Section:     func() platform.Section { return &Config{} },
	EnvDefaults: []platform.EnvDefault{{Key: "access_token", Env: "MATRIX_ACCESS_TOKEN"}},
	Validate:    validate,
	New:         newFromConfig,
	Runners:     runners,
	Hint:        "Matrix: your Markdown is shown as HTML; bold, italic, code, code blocks, links, quotes and simple lists work; no tables.",
	Doctor:      []platform.Check{{Name: Name, Net: true, Run: doctorWhoami}},
	ChatID:      checkChatID,
	UserID:      checkUserID,
}

func validate(s platform.Section, _ platform.Env, v *platform.Checker) {
	c := s.(*Config)
	if c.Homeserver != "" {
		if err := v.CheckURL(c.Homeserver, "http", "https"); err != nil {
			v.Fail("homeserver", "%v (the client-server base, e.g. https://matrix.example.org)", err)
		}
	}
	if c.UserID != "" && !validUserID(c.UserID) {
		v.Fail("user_id", "%q is not a Matrix user id: write @name:server, e.g. @switchboard:example.org", platform.Truncate(c.UserID, 60))
	}
	if c.Encryption {
		v.Fail("encryption", "end-to-end encryption is not supported yet: set false (an encrypted room gets one notice that the bot cannot read it)")
	}
	if !c.Enabled {
		return
	}
	if c.Homeserver == "" {
		v.Fail("homeserver", "is empty: channels.matrix needs the homeserver's client-server base URL, e.g. https://matrix.example.org")
	}
	v.Require("access_token", c.AccessToken.IsSet(), "channels.matrix is enabled")
}

func newFromConfig(_ context.Context, s platform.Section, deps platform.Deps) (channels.Channel, error) {
	c := s.(*Config)
	var kv KV
	if deps.KV != nil {
		kv = deps.KV
	}
	return New(Options{Homeserver: c.Homeserver, UserID: c.UserID, AccessToken: c.AccessToken.Value(),
		DeviceID: c.DeviceID, KV: kv, HTTPClient: deps.HTTPClient, Logger: deps.Logger})
}

// runners puts the sync loop under its lease.
func runners(_ context.Context, _ platform.Section, _ platform.Deps, ch channels.Channel) ([]platform.Runner, error) {
	a, ok := ch.(*Adapter)
	if !ok {
		return nil, nil
	}
	return []platform.Runner{{Lease: leaseSync, Run: a.Run, Ready: a.Ready}}, nil
}
