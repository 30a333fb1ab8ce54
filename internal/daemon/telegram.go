package daemon

import (
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/telegram"
)

// telegramChannel builds the Telegram adapter.
func (d *Daemon) telegramChannel() (channels.Channel, error) {
	tg := d.cfg.Channels.Telegram
	return telegram.New(telegram.Options{
		Token: tg.Token.Value(), APIURL: tg.APIURL, Mode: tg.Mode, WebhookURL: tg.WebhookURL,
		WebhookSecret: tg.WebhookSecret.Value(), EditInterval: tg.EditInterval, MaxMediaBytes: int64(tg.MaxMediaBytes),
		HTTPClient: d.opts.HTTPClient, Logger: d.log.With("channel", "telegram"),
	})
}
