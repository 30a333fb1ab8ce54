package daemon

// The web console (internal/ui) mounted on the HTTP server: the daemon
// implements its Backend, feeds its Stats as a second hub Observer, and
// hands it the web channel for the chat page.

import (
	"context"
	"net/http"
	"sort"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/heartbeat"
	"github.com/switchboard-bot/switchboard/internal/cluster"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/metrics"
	"github.com/switchboard-bot/switchboard/internal/redact"
	"github.com/switchboard-bot/switchboard/internal/ui"
	"github.com/switchboard-bot/switchboard/memory"
)

// consoleParts is the daemon's side of the web console.
type consoleParts struct {
	stats  *ui.Stats  // fed by the handler from the start
	server *ui.Server // nil when the console is off
}

// hubObserver reports the handler's events to the metrics and the
// console's stats. It embeds the metrics, so every other observer interface
// the hub looks for (hub.StorageObserver) still reaches them.
func (d *Daemon) hubObserver() hub.Observer {
	return consoleObserver{d.metrics, d.console.stats, d.procs}
}

type consoleObserver struct {
	*metrics.Metrics
	stats *ui.Stats
	procs *procScaler // a message takes the busy P count again (procscale.go)
}

var _ hub.StorageObserver = consoleObserver{}

func (o consoleObserver) MessageIn(channel string) {
	o.procs.busy()
	o.Metrics.MessageIn(channel)
	o.stats.MessageIn(channel)
}

// TurnDone also takes the busy P count: turns that no new message started
// (the inbox replayed at start, scheduled jobs, in a cluster the turns of
// messages another replica accepted) are work too.
func (o consoleObserver) TurnDone(channel string, res agent.Result, err error, dur time.Duration) {
	o.procs.busy()
	o.Metrics.TurnDone(channel, res, err, dur)
	o.stats.TurnDone(channel, res, err, dur)
}

// mountUI serves the console under /ui/ (and / as a redirect) when server.ui
// is on. Off loopback without server.admin_token it stays off and says why.
func (d *Daemon) mountUI(mux *http.ServeMux) {
	cfg := d.config()
	if !cfg.Server.UI {
		return
	}
	o := ui.Options{Backend: consoleBackend{d}, Stats: d.console.stats, Logger: d.log, Now: d.opts.Now}
	if d.web != nil {
		o.Chat = d.web
	}
	srv, err := ui.New(o)
	if err != nil {
		d.log.Warn("web console", "err", err)
		mux.HandleFunc("/ui/", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		})
		return
	}
	d.console.server = srv
	mux.Handle("/ui/", srv.Handler())
	mux.Handle("GET /{$}", srv.Handler())
}

// closeUI ends the console's live streams (the HTTP server is shutting down).
func (d *Daemon) closeUI() {
	if d.console.server != nil {
		d.console.server.Close()
	}
}

// consoleBackend is what the console sees of the daemon.
type consoleBackend struct{ d *Daemon }

var _ ui.Backend = consoleBackend{}

func (b consoleBackend) Config() *config.Config { return b.d.config() }
func (b consoleBackend) Store() memory.Store    { return b.d.store }

func (b consoleBackend) Tokens() []string {
	return []string{b.d.config().Server.AdminToken.Value(), b.d.localToken}
}

func (b consoleBackend) Channels() []ui.ChannelState {
	states := b.d.ChannelStates()
	out := make([]ui.ChannelState, 0, len(states))
	for name, st := range states {
		out = append(out, ui.ChannelState{Name: name, Connected: st.Ready, Restarts: st.Restarts, LastErr: redact.Text(st.LastErr)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (b consoleBackend) QueueDepth() int { return b.d.handler.Stats().QueueDepth }

// Deliveries reads switchboard_deliveries_total by outcome.
func (b consoleBackend) Deliveries() map[string]float64 {
	out := map[string]float64{}
	families, err := b.d.metrics.Registry().Gather()
	if err != nil {
		return out
	}
	for _, f := range families {
		if f.GetName() != "switchboard_deliveries_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// ModelEndpoints is the state of the model endpoints (statusmodels.go).
func (b consoleBackend) ModelEndpoints() []agent.EndpointStatus { return b.d.modelEndpoints() }

func (b consoleBackend) Personas() *hub.Resolver { return b.d.personas }
func (b consoleBackend) Jobs() *heartbeat.Jobs   { return b.d.sched.Jobs() }

func (b consoleBackend) PendingPairings(ctx context.Context) ([]hub.PairingRequest, error) {
	return b.d.handler.Pairing().Pending(ctx)
}

func (b consoleBackend) ApprovePairing(ctx context.Context, actor, code string) (hub.PairingRequest, error) {
	return b.d.handler.ApprovePairing(ctx, actor, "", code)
}

func (b consoleBackend) DenyPairing(ctx context.Context, actor, code string) (hub.PairingRequest, error) {
	return b.d.handler.DenyPairing(ctx, actor, code)
}

func (b consoleBackend) Approvals() []hub.WaitingApproval { return b.d.handler.PendingApprovals() }

func (b consoleBackend) DecideApproval(ctx context.Context, session string, approve bool, actor string) error {
	return b.d.handler.DecideApproval(ctx, session, approve, actor)
}

func (b consoleBackend) ResetSession(ctx context.Context, key, actor string) error {
	return ResetSession(ctx, b.d.store, key, actor, b.d.opts.Now())
}

func (b consoleBackend) Reload(ctx context.Context, who string) (string, error) {
	res, err := b.d.Reload(ctx, who)
	return res.String(), err
}

// Cluster is the cluster's status for the overview; ok is false with bolt.
func (b consoleBackend) Cluster(ctx context.Context) (cluster.Status, bool, error) {
	c := b.d.cluster.c
	if c == nil {
		return cluster.Status{}, false, nil
	}
	st, err := c.Status(ctx)
	return st, true, err
}

// CheckConfig runs on a candidate config (parsed in the daemon's
// environment) the checks a reload runs beyond parsing, against the
// personas directory in force: what `config set` asks of the running daemon
// too (configcheck.go).
func (b consoleBackend) CheckConfig(cfg *config.Config) error {
	return b.d.vet(b.d.config(), cfg)
}
