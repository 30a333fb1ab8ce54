package daemon

import (
	"context"
	"fmt"

	"golang.org/x/time/rate"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/discord"
	"github.com/switchboard-bot/switchboard/channels/slack"
	"github.com/switchboard-bot/switchboard/channels/telegram"
	"github.com/switchboard-bot/switchboard/internal/config"
)

// platformNames are the configurable platform channels, in start order.
var platformNames = []string{"telegram", "discord", "slack"}

// platformChannels builds the enabled Telegram, Discord and Slack adapters.
func (d *Daemon) platformChannels(_ context.Context) ([]channels.Channel, error) {
	cfg := d.config()
	var out []channels.Channel
	for _, name := range platformNames {
		if !platformEnabled(cfg, name) {
			continue
		}
		ch, err := d.buildPlatform(cfg, name)
		if err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	return out, nil
}

func platformEnabled(cfg *config.Config, name string) bool {
	switch name {
	case "telegram":
		return cfg.Channels.Telegram.Enabled
	case "discord":
		return cfg.Channels.Discord.Enabled
	case "slack":
		return cfg.Channels.Slack.Enabled
	}
	return false
}

// platformSettings returns a channel's config section, for change detection.
func platformSettings(cfg *config.Config, name string) any {
	switch name {
	case "telegram":
		return cfg.Channels.Telegram
	case "discord":
		return struct {
			config.Discord
			AllowBots bool
		}{cfg.Channels.Discord, cfg.Access.AllowBots}
	case "slack":
		return cfg.Channels.Slack
	}
	return nil
}

// buildPlatform constructs one platform adapter from cfg.
func (d *Daemon) buildPlatform(cfg *config.Config, name string) (channels.Channel, error) {
	c := cfg.Channels
	var (
		ch  channels.Channel
		err error
	)
	switch name {
	case "telegram":
		ch, err = telegram.New(telegram.Options{
			Token: c.Telegram.Token.Value(), APIURL: c.Telegram.APIURL, Mode: c.Telegram.Mode, WebhookURL: c.Telegram.WebhookURL,
			WebhookSecret: c.Telegram.WebhookSecret.Value(), EditInterval: c.Telegram.EditInterval,
			MaxMediaBytes: int64(c.Telegram.MaxMediaBytes), HTTPClient: d.opts.HTTPClient, Logger: d.log,
			PerChatRate: sendRate(c.Telegram.Rate.PerChat), PerChatBurst: c.Telegram.Rate.PerChatBurst,
			GlobalRate: sendRate(c.Telegram.Rate.Global), GlobalBurst: c.Telegram.Rate.GlobalBurst,
		})
	case "discord":
		ch, err = discord.New(d.discordOptions(cfg, 0)) // shard 0; cluster.go builds the others
	case "slack":
		threads := c.Slack.ThreadReplies
		ch, err = slack.New(slack.Options{
			BotToken: c.Slack.BotToken.Value(), AppToken: c.Slack.AppToken.Value(), Mode: c.Slack.Mode,
			SigningSecret: c.Slack.SigningSecret.Value(), APIURL: c.Slack.APIURL, ThreadReplies: &threads,
			EditInterval: c.Slack.EditInterval, MaxMediaBytes: int64(c.Slack.MaxMediaBytes),
			HTTPClient: d.opts.HTTPClient, Logger: d.log,
		})
	default:
		return nil, fmt.Errorf("unknown channel %q", name)
	}
	if err != nil {
		return nil, fmt.Errorf("channels.%s: %w", name, err)
	}
	return ch, nil
}

// discordOptions are the Discord adapter's options for gateway shard
// shard of channels.discord.shards; each shard keeps its own cursors.
func (d *Daemon) discordOptions(cfg *config.Config, shard int) discord.Options {
	c := cfg.Channels.Discord
	return discord.Options{
		Token: c.Token.Value(), APIURL: c.APIURL, GatewayURL: c.GatewayURL,
		Guilds: c.Guilds, AllowBots: cfg.Access.AllowBots, EditInterval: c.EditInterval,
		MaxMediaBytes: int64(c.MaxMediaBytes), HTTPClient: d.opts.HTTPClient, Logger: d.log,
		Cursors: shardCursors(d.store, shard, c.Shards), ShardID: shard, ShardCount: c.Shards,
	}
}

// sendRate turns a configured messages-per-second rate into a limiter rate:
// 0 (no limit) is rate.Inf, which the adapters read as "unpaced".
func sendRate(perSecond float64) rate.Limit {
	if perSecond <= 0 {
		return rate.Inf
	}
	return rate.Limit(perSecond)
}
