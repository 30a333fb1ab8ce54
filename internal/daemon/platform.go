package daemon

import (
	"context"
	"fmt"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/discord"
	"github.com/switchboard-bot/switchboard/channels/slack"
)

// platformChannels builds the enabled Telegram, Discord and Slack adapters.
func (d *Daemon) platformChannels(_ context.Context) ([]channels.Channel, error) {
	cfg := d.cfg.Channels
	var out []channels.Channel
	if cfg.Telegram.Enabled {
		ch, err := d.telegramChannel()
		if err != nil {
			return nil, fmt.Errorf("channels.telegram: %w", err)
		}
		out = append(out, ch)
	}
	if cfg.Discord.Enabled {
		ch, err := discord.New(discord.Options{
			Token: cfg.Discord.Token.Value(), APIURL: cfg.Discord.APIURL, GatewayURL: cfg.Discord.GatewayURL,
			Guilds: cfg.Discord.Guilds, AllowBots: d.cfg.Access.AllowBots, EditInterval: cfg.Discord.EditInterval,
			MaxMediaBytes: int64(cfg.Discord.MaxMediaBytes), HTTPClient: d.opts.HTTPClient, Logger: d.log.With("channel", "discord"),
		})
		if err != nil {
			return nil, fmt.Errorf("channels.discord: %w", err)
		}
		out = append(out, ch)
	}
	if cfg.Slack.Enabled {
		threads := cfg.Slack.ThreadReplies
		ch, err := slack.New(slack.Options{
			BotToken: cfg.Slack.BotToken.Value(), AppToken: cfg.Slack.AppToken.Value(), Mode: cfg.Slack.Mode,
			SigningSecret: cfg.Slack.SigningSecret.Value(), APIURL: cfg.Slack.APIURL, ThreadReplies: &threads,
			EditInterval: cfg.Slack.EditInterval, MaxMediaBytes: int64(cfg.Slack.MaxMediaBytes),
			HTTPClient: d.opts.HTTPClient, Logger: d.log.With("channel", "slack"),
		})
		if err != nil {
			return nil, fmt.Errorf("channels.slack: %w", err)
		}
		out = append(out, ch)
	}
	return out, nil
}
