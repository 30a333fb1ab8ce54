package daemon

import (
	"github.com/switchboard-bot/switchboard/channels/web"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/ui"
)

// webWanted reports whether the web console's chat channel runs: it is
// enabled (channels.web.enabled, default true) and the console that serves
// it is on (server.ui with a listen address the console agrees to serve:
// ui.CheckServe). A reload does not add or remove it; a restart does.
func webWanted(cfg *config.Config) bool {
	return cfg.Channels.Enabled(web.Name) && cfg.Server.UI && cfg.Server.Listen != "" && ui.CheckServe(cfg) == nil
}

// buildWeb constructs the web channel when it is wanted (nil otherwise) and
// keeps it for the console (WebChannel).
func (d *Daemon) buildWeb(cfg *config.Config) *web.Adapter {
	if !webWanted(cfg) {
		return nil
	}
	d.web = web.New(web.Options{Logger: d.log, Now: d.opts.Now})
	return d.web
}

// WebChannel is the web console's chat channel, nil when it does not run.
func (d *Daemon) WebChannel() *web.Adapter { return d.web }

// stopWeb ends the web channel's live subscriptions at shutdown, so the
// console's open event streams end and the HTTP server can stop.
func (d *Daemon) stopWeb() {
	if d.web != nil {
		d.web.Stop()
	}
}
