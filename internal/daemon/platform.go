package daemon

import (
	"context"
	"fmt"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/platform"
	"github.com/switchboard-bot/switchboard/internal/config"
)

// platformNames are the platforms the daemon constructs from their
// descriptors (those with a constructor), in the registry's order. The
// console and the web chat have none: buildChannels builds them.
func platformNames(cfg *config.Config) []string {
	var out []string
	for _, d := range cfg.Platforms().All() {
		if d.New != nil {
			out = append(out, d.Name)
		}
	}
	return out
}

// platformChannels builds the enabled platform adapters.
func (d *Daemon) platformChannels(ctx context.Context) ([]channels.Channel, error) {
	cfg := d.config()
	var out []channels.Channel
	for _, name := range platformNames(cfg) {
		if !platformEnabled(cfg, name) {
			continue
		}
		ch, err := d.buildPlatform(ctx, cfg, name)
		if err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	return out, nil
}

func platformEnabled(cfg *config.Config, name string) bool { return cfg.Channels.Enabled(name) }

// platformSettings returns a channel's config section with what else its
// constructor reads (access.allow_bots), for change detection.
func platformSettings(cfg *config.Config, name string) any {
	sec := cfg.Channels[name]
	if sec == nil {
		return nil
	}
	return struct {
		Section   any
		AllowBots bool
	}{sec, cfg.Access.AllowBots}
}

// platformDeps are what a platform's constructor gets from the daemon.
func (d *Daemon) platformDeps(cfg *config.Config) platform.Deps {
	return platform.Deps{HTTPClient: d.opts.HTTPClient, Logger: d.log, KV: d.store, AllowBots: cfg.Access.AllowBots}
}

// buildPlatform constructs one platform adapter from cfg.
func (d *Daemon) buildPlatform(ctx context.Context, cfg *config.Config, name string) (channels.Channel, error) {
	desc, ok := cfg.Platforms().Lookup(name)
	if !ok || desc.New == nil {
		return nil, fmt.Errorf("unknown channel %q", name)
	}
	ch, err := desc.New(ctx, cfg.Channels[name], d.platformDeps(cfg))
	if err != nil {
		return nil, fmt.Errorf("channels.%s: %w", name, err)
	}
	return ch, nil
}
