// Package daemon wires Switchboard together from a config: the BoltDB store,
// the agent, the shared handler and every enabled channel, each channel under
// its own supervisor (restart with backoff; one channel's crash never stops
// the others), the HTTP server on server.listen (health, readiness, webhooks,
// the local admin endpoints), replay of the inbox at start, and graceful
// shutdown (stop intake, let turns finish within a grace period, close the store).
// It also owns the process's runtime settings: GOGC and GOMAXPROCS defaults (runtimedefaults.go)
// and handing memory back while idle (pagetrim.go).
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/channels/web"
	"github.com/switchboard-bot/switchboard/heartbeat"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/metrics"
	"github.com/switchboard-bot/switchboard/internal/platforms"
	"github.com/switchboard-bot/switchboard/internal/tasks"
	"github.com/switchboard-bot/switchboard/internal/ui"
	"github.com/switchboard-bot/switchboard/memory"
)

// Options configures a Daemon.
type Options struct {
	Config *config.Config
	Logger *slog.Logger
	// Console I/O (defaults: os.Stdin / os.Stdout) and whether to print a prompt.
	Stdin         io.Reader
	Stdout        io.Writer
	ConsolePrompt bool
	// ConsoleScreen, if set, is where the console writes (Stdout is then
	// ignored); the caller's logger writes through ConsoleScreen.Logs so log
	// lines never tear an answer line.
	ConsoleScreen *console.Screen
	// OnlyConsole runs the console channel alone (switchboard chat).
	OnlyConsole bool
	// QuitOnEOF stops the daemon when console input ends.
	QuitOnEOF bool
	// Channels are extra channels to run (tests use console.Memory).
	Channels []channels.Channel
	// HTTPClient is used by the model provider and adapters (tests inject one).
	HTTPClient *http.Client
	// ShutdownGrace bounds how long running turns may finish at shutdown (default 10s).
	ShutdownGrace time.Duration
	// RestartBackoff is the supervisor's first restart delay (default 1s).
	RestartBackoff time.Duration
	// LogLevel, if set, is adjusted when a reload changes log.level.
	LogLevel *slog.LevelVar
	// NoWatch disables watching config.yaml and the personas directory.
	NoWatch bool
	// WatchDebounce groups file events (default 250ms).
	WatchDebounce time.Duration
	Now           func() time.Time
	// ReleaseIdleMemory hands the executable's start-up pages back once every
	// channel has connected, and memory again whenever the daemon was idle for
	// IdleTrimEvery (default 30s; pagetrim.go). The switchboard command sets it.
	ReleaseIdleMemory bool
	IdleTrimEvery     time.Duration
	OnMemoryRelease   func() // tests: told of each release
	// Procs are the P counts ApplyRuntimeDefaults chose: with
	// ReleaseIdleMemory the daemon starts with Procs.Idle, takes Procs.Busy
	// with a message and goes back to Procs.Idle when it hands memory back
	// (procscale.go). Zero: GOMAXPROCS is left alone.
	Procs Procs
}

// Daemon is a running Switchboard.
type Daemon struct {
	cfgp     atomic.Pointer[config.Config]
	log      *slog.Logger
	store    memory.Store
	core     *Core
	agent    agentRef // swapped when a reload changes model or agent settings
	personas *hub.Resolver
	sched    *heartbeat.Scheduler
	tasks    *tasks.Runner // background tasks (tasks.go); nil when the store keeps none
	metrics  *metrics.Metrics
	handler  *hub.Handler
	deliver  outbound.Router // heartbeat, jobs and alerts deliver through it, beside the hub
	chans    []channels.Channel
	opts     Options
	term     *console.Terminal // the console: the terminal, or a headless one serving remote chats
	web      *web.Adapter      // the web console's chat channel (web.go); nil when off
	console  consoleParts      // the web console (ui.go)
	cluster  clusterState      // replicas (cluster.go); zero with bolt
	claims   *sessionClaims    // per-session claims with replicas (claims.go); nil with bolt
	procs    *procScaler       // GOMAXPROCS busy and idle (procscale.go)
	probe    storeProbe        // the periodic store probe (storehealth.go)
	logs     *logTail          // the last log records, for the console (logs.go)

	mu     sync.Mutex
	sups   map[string]*supervisor
	server *http.Server
	addr   net.Addr
	ready  chan struct{}
	quit   chan struct{}
	quitMu sync.Once
	runCtx context.Context // channels' context while Run runs

	reloadMu sync.Mutex // one reload at a time

	localToken   string      // admin token for local CLI commands (admintoken.go); set before the HTTP server starts
	adminGuesses *guessLimit // wrong admin tokens per address (adminauth.go); set with localToken
}

// New opens the store and builds the agent, handler and channels. It does not
// connect anything; Run does.
func New(ctx context.Context, o Options) (*Daemon, error) {
	if o.Config == nil {
		return nil, errors.New("daemon: no config")
	}
	procs := &procScaler{procs: o.Procs}
	if o.ReleaseIdleMemory {
		// Start up with Go's count, as an idle daemon runs: start-up spread
		// over more Ps stays resident. The first message takes the busy count.
		procs.idle(nil)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = 10 * time.Second
	}
	cfg := o.Config
	logs := newLogTail(&o, cfg) // o.Logger writes to the console's ring too (logs.go)
	mets := metrics.New()
	core, err := buildCore(cfg, o.Logger, o.HTTPClient, mets.ModelCall, mets)
	if err != nil {
		return nil, err
	}
	d := &Daemon{log: o.Logger, store: core.Store, core: core, personas: core.Personas,
		metrics: mets, console: consoleParts{stats: ui.NewStats(o.Now)}, opts: o, procs: procs, sups: map[string]*supervisor{}, ready: make(chan struct{}), quit: make(chan struct{})}
	d.cfgp.Store(cfg)
	d.logs = logs
	logs.attach(d)
	d.agent.p.Store(core.Agent)
	if err := d.openCluster(cfg); err != nil {
		core.Close()
		return nil, err
	}
	out := outbound.New(core.Store, outbound.Options{Logger: o.Logger, Observer: d.metrics, MaxChunks: cfg.Agent.MaxAnswerChunks})
	d.handler = hub.NewHandler(hub.HandlerOptions{
		Claims:             d.sessionClaims(), // nil with bolt: one process
		Store:              core.Store,
		Agent:              &d.agent,
		Access:             accessPolicy(cfg),
		MaxConcurrentTurns: cfg.Agent.MaxConcurrentTurns,
		MaxMessageChars:    cfg.Agent.MaxMessageChars,
		MaxTurnChars:       cfg.Agent.MaxTurnChars,
		ApprovalTimeout:    cfg.Agent.ApprovalTimeout,
		Outbound:           out,
		Observer:           d.hubObserver(),
		Personas:           core.Personas,
		Admin:              hubAdmin{d},
		Usage:              d.usageSettings,
		WorkspaceLimits:    func() memory.WorkspaceLimits { return workspaceLimits(d.config())() },
		Tasks:              taskControl{d},
		Speech:             speechSource(d), // voice replies (media.go)
		Formatting:         cfg.Platforms().Hints(),
		BotName:            cfg.Bot.Name,
		Logger:             o.Logger,
		Now:                o.Now,
	})
	d.deliver = outbound.Router{Out: out, Channels: d.handler.Channel}
	if err := d.buildScheduler(core); err != nil {
		d.closeCluster()
		core.Close()
		return nil, err
	}
	if err := d.buildTasks(core); err != nil {
		d.closeCluster()
		core.Close()
		return nil, err
	}
	d.metrics.Gauge("switchboard_queue_depth", "Messages waiting in session queues.",
		func() float64 { return float64(d.handler.Stats().QueueDepth) })
	d.metrics.Gauge("switchboard_active_sessions", "Sessions with a turn running or queued.",
		func() float64 { return float64(d.handler.Stats().ActiveSessions) })
	d.registerStoreGauge()
	chs, err := d.buildChannels(ctx)
	if err != nil {
		d.closeCluster()
		core.Close()
		return nil, err
	}
	d.chans = append(chs, o.Channels...)
	for _, ch := range d.chans {
		d.handler.Register(ch)
	}
	if d.term == nil { // console disabled: still serve `switchboard chat` through the admin API
		d.term = console.New(console.Options{Headless: true})
		d.handler.Register(d.term)
	}
	return d, nil
}

func accessPolicy(cfg *config.Config) channels.AccessPolicy {
	return channels.AccessPolicy{Mode: cfg.Access.Mode, AllowFrom: cfg.Access.AllowFrom, Groups: cfg.Access.Groups,
		AllowBots: cfg.Access.AllowBots, Admins: cfg.Bot.Admins}
}

// config returns the configuration in force (swapped by Reload).
func (d *Daemon) config() *config.Config { return d.cfgp.Load() }

// FormattingHint is the markup note the model gets for a channel of the
// built-in platforms (its descriptor's Hint).
func FormattingHint(channel string) string {
	p, _ := platforms.Builtin.Lookup(channel)
	return p.Hint
}

// Handler returns the shared handler.
func (d *Daemon) Handler() *hub.Handler { return d.handler }

// Agent returns the agent.
func (d *Daemon) Agent() *agent.Agent { return d.agent.p.Load() }

// Store returns the store.
func (d *Daemon) Store() memory.Store { return d.store }

// Addr is the HTTP server's address once Run has started it (nil before).
func (d *Daemon) Addr() net.Addr {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.addr
}

// Ready is closed once Run has replayed the inbox and started every channel.
func (d *Daemon) Ready() <-chan struct{} { return d.ready }

// Run serves until ctx is canceled, then shuts down gracefully and closes the
// store. It returns an error only if the daemon could not start.
func (d *Daemon) Run(ctx context.Context) error {
	if err := d.startHTTP(); err != nil {
		d.Close()
		return err
	}
	if n, err := d.handler.Replay(ctx); err != nil {
		d.log.Error("replay inbox", "err", err)
	} else if n > 0 {
		d.log.Info("inbox replay queued", "items", n)
	}
	runCtx, cancelChannels := context.WithCancel(context.Background())
	defer cancelChannels()
	d.mu.Lock()
	d.runCtx = runCtx
	d.mu.Unlock()
	var background sync.WaitGroup
	background.Go(func() { d.watch(runCtx) })
	background.Go(func() { d.prune(runCtx) })
	background.Go(func() { d.probeStorage(runCtx) })
	d.startScheduler(runCtx, &background) // under the scheduler lease with replicas (cluster.go)
	d.startTasks(runCtx)
	if d.claims != nil {
		background.Go(func() { d.claims.run(runCtx, d.handler) }) // NOTIFY wake-ups and takeover sweeps (claims.go)
	}
	for _, ch := range d.chans {
		sup := d.superviseChannel(ch)
		d.mu.Lock()
		d.sups[ch.Name()] = sup
		d.mu.Unlock()
		sup.start(runCtx)
	}
	d.log.Info("switchboard is running", "channels", d.channelNames(), "listen", d.addrString(), "model", d.config().LLM.Model)
	close(d.ready)
	if d.opts.ReleaseIdleMemory {
		background.Go(func() { d.releaseIdleMemory(runCtx) })
	}

	select {
	case <-ctx.Done():
	case <-d.quit:
	}
	d.log.Info("shutting down")
	grace, cancel := context.WithTimeout(context.Background(), d.opts.ShutdownGrace)
	defer cancel()
	d.sched.Stop()
	d.stopTasks()          // running tasks go back to the queue
	d.handler.Close(grace) // stop intake; finish or cancel turns
	for _, sup := range d.supervisors() {
		sup.stop()
	}
	d.core.MCP.Close() // every MCP child process, reaped
	cancelChannels()
	background.Wait()
	d.closeCluster() // every lease holder has returned
	d.stopWeb()
	d.stopHTTP()
	if err := d.store.Close(); err != nil {
		d.log.Error("close store", "err", err)
	}
	d.log.Info("stopped")
	return nil
}

func (d *Daemon) supervisors() []*supervisor {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*supervisor, 0, len(d.sups))
	for _, s := range d.sups {
		out = append(out, s)
	}
	return out
}

func (d *Daemon) channelNames() []string {
	out := make([]string, len(d.chans))
	for i, ch := range d.chans {
		out[i] = ch.Name()
	}
	return out
}

func (d *Daemon) addrString() string {
	if a := d.Addr(); a != nil {
		return a.String()
	}
	return ""
}

// buildChannels constructs the enabled platform channels.
func (d *Daemon) buildChannels(ctx context.Context) ([]channels.Channel, error) {
	cfg := d.config()
	var out []channels.Channel
	if cfg.Channels.Enabled(console.Name) || d.opts.OnlyConsole {
		co := console.Options{In: d.opts.Stdin, Out: d.opts.Stdout, Prompt: d.opts.ConsolePrompt, Screen: d.opts.ConsoleScreen}
		if d.opts.QuitOnEOF {
			co.OnEOF = d.Stop
		}
		d.term = console.New(co)
		out = append(out, d.term)
	}
	if d.opts.OnlyConsole {
		return out, nil
	}
	if w := d.buildWeb(cfg); w != nil {
		out = append(out, w)
	}
	platform, err := d.platformChannels(ctx)
	if err != nil {
		return nil, err
	}
	return append(out, platform...), nil
}

// ChannelStates reports each channel's supervisor state.
func (d *Daemon) ChannelStates() map[string]supervisorState {
	out := map[string]supervisorState{}
	for name, s := range d.supervisorsByName() {
		out[name] = s.state()
	}
	return out
}

func (d *Daemon) supervisorsByName() map[string]*supervisor {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]*supervisor, len(d.sups))
	for k, v := range d.sups {
		out[k] = v
	}
	return out
}

// Close releases a daemon that was built but never run (CLI one-offs).
func (d *Daemon) Close() error { d.core.MCP.Close(); d.closeCluster(); return d.store.Close() }

// Metrics returns the daemon's metrics.
func (d *Daemon) Metrics() *metrics.Metrics { return d.metrics }

// prune applies the retention settings at start and then hourly.
func (d *Daemon) prune(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if err := d.store.Prune(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("prune old records", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// consoleTerminal is the console channel (remote chats attach to it).
func (d *Daemon) consoleTerminal() *console.Terminal { return d.term }

// ShutdownGrace is how long running turns may finish at shutdown.
func (d *Daemon) ShutdownGrace() time.Duration { return d.opts.ShutdownGrace }

// Running is the number of chats with a turn running or queued.
func (d *Daemon) Running() int { return d.handler.Stats().ActiveSessions }

// Interrupt marks the shutdown as the operator's (Ctrl-C): turns canceled by
// it are finished, not replayed at the next start. now cancels them at once
// (a second Ctrl-C) instead of at the end of the grace period.
func (d *Daemon) Interrupt(now bool) { d.handler.OperatorCancel(now) }

// Stop asks Run to shut down; idempotent.
func (d *Daemon) Stop() { d.quitMu.Do(func() { close(d.quit) }) }

func fmtAny(v any) string { return fmt.Sprint(v) }
