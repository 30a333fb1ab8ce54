package discord

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/platform"
)

// Config is the channels.discord section of config.yaml.
type Config struct {
	Enabled       bool            `yaml:"enabled"`
	Token         platform.Secret `yaml:"token"`
	APIURL        string          `yaml:"api_url"`     // scheme://host:port only
	GatewayURL    string          `yaml:"gateway_url"` // overrides /gateway/bot's url
	Guilds        []string        `yaml:"guilds"`      // empty = every guild the bot is in
	EditInterval  time.Duration   `yaml:"edit_interval"`
	MaxMediaBytes int             `yaml:"max_media_bytes"`
	// Shards is the number of gateway shards (default 1); with replicas
	// each shard is a lease some replica holds.
	Shards int `yaml:"shards"`
}

// IsEnabled implements platform.Section.
func (c *Config) IsEnabled() bool { return c.Enabled }

// ConfigIn returns the Discord section of s.
func ConfigIn(s platform.Sections) *Config { return platform.Get[*Config](s, Name) }

// Platform describes Discord to the registry (internal/platforms).
var Platform = platform.Descriptor{
	Name: Name,
	Section: func() platform.Section {
		return &Config{Guilds: []string{}, EditInterval: time.Second, MaxMediaBytes: 10 << 20, Shards: 1}
	},
	EnvDefaults: []platform.EnvDefault{{Key: "token", Env: "DISCORD_BOT_TOKEN"}},
	Validate:    validate,
	New: func(_ context.Context, s platform.Section, deps platform.Deps) (channels.Channel, error) {
		return New(options(s.(*Config), deps, 0)) // shard 0; runners builds the others
	},
	Runners: runners,
	Hint:    "Discord: Discord Markdown is shown as is; keep answers under a few paragraphs; no tables.",
	Doctor:  []platform.Check{{Name: Name, Net: true, Run: doctorMe}},
}

func validate(s platform.Section, _ platform.Env, v *platform.Checker) {
	d := s.(*Config)
	if d.APIURL != "" {
		if err := v.CheckURL(d.APIURL, "http", "https"); err != nil {
			v.Fail("api_url", "%v", err)
		} else if u, _ := url.Parse(d.APIURL); strings.Trim(u.Path, "/") != "" {
			v.Fail("api_url", "must be scheme, host and port only (e.g. http://127.0.0.1:9001); discordgo adds /api/v9")
		}
	}
	if d.GatewayURL != "" {
		if err := v.CheckURL(d.GatewayURL, "ws", "wss"); err != nil {
			v.Fail("gateway_url", "%v", err)
		}
	}
	for i, g := range d.Guilds {
		if _, err := strconv.ParseUint(g, 10, 64); err != nil {
			v.Fail(fmt.Sprintf("guilds[%d]", i), "guild id %q must be a numeric snowflake", platform.Truncate(g, 60))
		}
	}
	v.NonNegativeDur("edit_interval", d.EditInterval)
	v.NonNegative("max_media_bytes", d.MaxMediaBytes)
	v.Positive("shards", d.Shards)
	if d.Enabled {
		v.Require("token", d.Token.IsSet(), "channels.discord is enabled")
	}
}

// options are the adapter's options for gateway shard shard of c.Shards;
// each shard keeps its own cursors.
func options(c *Config, deps platform.Deps, shard int) Options {
	o := Options{
		Token: c.Token.Value(), APIURL: c.APIURL, GatewayURL: c.GatewayURL,
		Guilds: c.Guilds, AllowBots: deps.AllowBots, EditInterval: c.EditInterval,
		MaxMediaBytes: int64(c.MaxMediaBytes), HTTPClient: deps.HTTPClient, Logger: deps.Logger,
		ShardID: shard, ShardCount: c.Shards,
	}
	if deps.KV != nil {
		o.Cursors = shardCursors(deps.KV, shard, c.Shards)
	}
	return o
}

// runners runs every gateway shard, shard i under the "discord-shard-<i>"
// lease with replicas: shard 0 is the registered adapter (which sends for
// all of them), the others are built here.
func runners(_ context.Context, s platform.Section, deps platform.Deps, ch channels.Channel) ([]platform.Runner, error) {
	c := s.(*Config)
	shard0, ok := ch.(*Adapter)
	if !ok {
		return nil, nil
	}
	out := []platform.Runner{{Lease: shardLease(0), Run: shard0.Run, Ready: shard0.Ready}}
	for i := 1; i < c.Shards; i++ {
		a, err := New(options(c, deps, i))
		if err != nil {
			return out, fmt.Errorf("discord shard %d: %w", i, err)
		}
		out = append(out, platform.Runner{Lease: shardLease(i), Run: a.Run, Ready: a.Ready})
	}
	return out, nil
}

// shardLease is the lease of gateway shard i.
func shardLease(i int) string { return fmt.Sprintf("discord-shard-%d", i) }

// shardCursors keeps the cursors of shard i of n > 1 under a key of its
// own ("discord/cursors/shard-1-of-2"): shards run on different replicas
// and would overwrite each other's. Shard 0 keeps the plain key.
func shardCursors(kv CursorStore, shard, n int) CursorStore {
	if n <= 1 || shard == 0 {
		return kv
	}
	return suffixKV{kv: kv, suffix: fmt.Sprintf("/shard-%d-of-%d", shard, n)}
}

type suffixKV struct {
	kv     CursorStore
	suffix string
}

func (s suffixKV) KVGet(ctx context.Context, key string) ([]byte, bool, error) {
	return s.kv.KVGet(ctx, key+s.suffix)
}

func (s suffixKV) KVPut(ctx context.Context, key string, val []byte) error {
	return s.kv.KVPut(ctx, key+s.suffix, val)
}
