package daemon

import (
	"context"
	"errors"

	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/heartbeat"
)

// hubAdmin serves the hub's admin commands (/status, /reload, /jobs,
// /heartbeat) and its check for answers send_message already delivered. The
// scheduler is built after the handler, so every method looks it up when
// called.
type hubAdmin struct{ d *Daemon }

// What the daemon hands the hub and the scheduler fits their interfaces.
var (
	_ hub.Admin             = hubAdmin{}
	_ heartbeat.Deliverer   = outbound.Router{}
	_ heartbeat.BusyChecker = (*hub.Handler)(nil)
)

// Status adds the daemon's facts (channels, model, jobs) to /status.
func (a hubAdmin) Status(ctx context.Context) string { return a.d.statusFacts(ctx) }

// Reload re-reads the configuration for /reload; who is the admin.
func (a hubAdmin) Reload(ctx context.Context, who string) (string, error) {
	res, err := a.d.Reload(ctx, who)
	return res.String(), err
}

// Jobs describes the scheduled jobs for /jobs.
func (a hubAdmin) Jobs(ctx context.Context) string { return a.d.jobsText(ctx) }

// HeartbeatEnabled reports whether proactive greetings are on.
func (a hubAdmin) HeartbeatEnabled(ctx context.Context) bool {
	return a.d.sched != nil && a.d.sched.Heartbeat().Enabled(ctx)
}

// SetHeartbeat turns proactive greetings on or off.
func (a hubAdmin) SetHeartbeat(ctx context.Context, on bool) error {
	if a.d.sched == nil {
		return errors.New("no scheduler")
	}
	return a.d.sched.Heartbeat().SetEnabled(ctx, on)
}

// AlreadySent reports whether the send_message tool already delivered text
// to target during the turn.
func (a hubAdmin) AlreadySent(turnID, target, text string) bool {
	return a.d.sched != nil && a.d.sched.Sent().WasSent(turnID, target, text)
}
