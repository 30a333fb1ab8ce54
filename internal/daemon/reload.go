package daemon

import (
	"context"
	"errors"
	"fmt"
	"github.com/switchboard-bot/switchboard/agent/tools"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/memory"
)

// agentRef lets a reload swap the agent under the handler and the scheduler.
// A turn already running finishes on the agent it started with.
type agentRef struct{ p atomic.Pointer[agent.Agent] }

func (r *agentRef) ProcessMessage(ctx context.Context, req agent.Request) (agent.Result, error) {
	return r.p.Load().ProcessMessage(ctx, req)
}

func (r *agentRef) ProcessDirect(ctx context.Context, key, text string, o agent.DirectOptions) (string, error) {
	return r.p.Load().ProcessDirect(ctx, key, text, o)
}

// ReloadResult says what a reload changed.
type ReloadResult struct {
	Changed        []string // sections applied live
	Restarted      []string // channels restarted
	RestartNeeded  []string // keys that only take effect after a restart
	PersonaErrors  []error
	PersonasLoaded int
}

func (r ReloadResult) String() string {
	var b strings.Builder
	if len(r.Changed) == 0 && len(r.Restarted) == 0 {
		b.WriteString("config reloaded: nothing changed")
	} else {
		b.WriteString("config reloaded")
		if len(r.Changed) > 0 {
			b.WriteString("; applied: " + strings.Join(r.Changed, ", "))
		}
		if len(r.Restarted) > 0 {
			b.WriteString("; restarted channels: " + strings.Join(r.Restarted, ", "))
		}
	}
	if len(r.RestartNeeded) > 0 {
		b.WriteString("; needs a daemon restart to take effect: " + strings.Join(r.RestartNeeded, ", "))
	}
	for _, e := range r.PersonaErrors {
		b.WriteString("\npersona skipped: " + e.Error())
	}
	return b.String()
}

// Reload re-reads config.yaml and the personas directory and applies the
// difference. An invalid config is rejected with its file:line errors, told
// to the admins, and the running config stays. who is recorded in the audit log.
func (d *Daemon) Reload(ctx context.Context, who string) (ReloadResult, error) {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	return d.reloadLocked(ctx, who)
}

// reloadLocked is Reload with reloadMu held. The file is checked by
// candidate, the same check `config set` asks for before it writes
// (configcheck.go).
func (d *Daemon) reloadLocked(ctx context.Context, who string) (ReloadResult, error) {
	old := d.config()
	data, err := config.ReadFile(old.Path)
	var next *config.Config
	if err == nil {
		next, err = d.candidate(old, data)
	}
	if err != nil {
		err = fmt.Errorf("config rejected, the running config stays: %w", err)
		d.log.Error("reload", "by", who, "err", err)
		d.auditReload(ctx, who, "rejected", err)
		d.alertAdmins(ctx, "Switchboard: "+err.Error())
		return ReloadResult{}, err
	}
	res, err := d.apply(ctx, old, next)
	d.auditReload(ctx, who, res.String(), err)
	if err != nil {
		d.log.Error("reload", "by", who, "err", err)
		return res, err
	}
	d.log.Info(res.String(), "by", who)
	return res, nil
}

// apply switches from old to next, section by section. What can fail is
// built before anything is switched.
func (d *Daemon) apply(ctx context.Context, old, next *config.Config) (ReloadResult, error) {
	res := ReloadResult{RestartNeeded: restartNeeded(old, next)}
	newAgent, err := d.rebuildAgent(old, next)
	if err != nil {
		return res, err
	}
	d.applyPersonas(old, next, &res)

	d.cfgp.Store(next)
	if changed(old.Access, next.Access) || !slices.Equal(old.Bot.Admins, next.Bot.Admins) {
		d.handler.SetAccess(accessPolicy(next))
		res.Changed = append(res.Changed, "access")
	}
	if newAgent != nil {
		d.agent.p.Store(newAgent)
		d.handler.SetInputLimits(next.Agent.MaxMessageChars, next.Agent.MaxTurnChars)
		d.handler.Outbound().SetMaxChunks(next.Agent.MaxAnswerChunks)
		d.handler.SetApprovalTimeout(next.Agent.ApprovalTimeout)
		res.Changed = append(res.Changed, "llm/agent")
	}
	if changed(old.MCP, next.MCP) {
		d.core.MCP.Apply(mcpConfigs(next)) // only the servers that changed
		res.Changed = append(res.Changed, "mcp")
	}
	if err := d.applySchedule(old, next, &res); err != nil {
		return res, err
	}
	if old.Log.Level != next.Log.Level && d.opts.LogLevel != nil {
		d.opts.LogLevel.Set(next.Log.SlogLevel())
		res.Changed = append(res.Changed, "log.level")
	}
	var errs []error
	for _, name := range platformNames(next) {
		if !changed(platformSettings(old, name), platformSettings(next, name)) {
			continue
		}
		if err := d.restartChannel(next, name); err != nil {
			errs = append(errs, err)
			continue
		}
		res.Restarted = append(res.Restarted, name)
	}
	return res, errors.Join(errs...)
}

// changed reports whether a config section differs.
func changed(a, b any) bool { return !reflect.DeepEqual(a, b) }

// restartNeeded lists the changed keys that need a new process.
func restartNeeded(old, next *config.Config) []string {
	var keys []string
	if old.Server.Listen != next.Server.Listen {
		keys = append(keys, "server.listen")
	}
	if old.ResolvePath(old.Bot.DataDir) != next.ResolvePath(next.Bot.DataDir) {
		keys = append(keys, "bot.data_dir")
	}
	if old.Server.AdminToken != next.Server.AdminToken {
		keys = append(keys, "server.admin_token")
	}
	if old.Bot.Name != next.Bot.Name {
		keys = append(keys, "bot.name")
	}
	if old.Personas.Dir != next.Personas.Dir {
		keys = append(keys, "personas.dir")
	}
	// Read once at start: the console's routes, the web and terminal chat
	// channels, the log handler (its level is applied live).
	if old.Server.UI != next.Server.UI {
		keys = append(keys, "server.ui")
	}
	for _, p := range next.Platforms().All() {
		if p.New == nil && old.Channels.Enabled(p.Name) != next.Channels.Enabled(p.Name) {
			keys = append(keys, "channels."+p.Name+".enabled") // built with the terminal or the console
		}
	}
	if old.Log.Format != next.Log.Format {
		keys = append(keys, "log.format")
	}
	// The store and the cluster are opened once, with their options.
	if changed(old.Storage, next.Storage) {
		keys = append(keys, "storage")
	}
	if old.Cluster != next.Cluster {
		keys = append(keys, "cluster")
	}
	if old.Retention != next.Retention {
		keys = append(keys, "retention")
	}
	return keys
}

// agentChanged reports whether next needs a new agent (and its tools): llm,
// agent, exec, workspace (exec's file size bound), skills.dir or the time
// zone changed.
func agentChanged(old, next *config.Config) bool {
	return changed(old.LLM, next.LLM) || changed(old.Agent, next.Agent) || changed(old.Exec, next.Exec) ||
		changed(old.Workspace, next.Workspace) || changed(old.Media, next.Media) || old.Bot.Timezone != next.Bot.Timezone ||
		old.ResolvePath(old.Skills.Dir) != next.ResolvePath(next.Skills.Dir)
}

// rebuildAgent builds the agent (with its tools, spawn included) for next
// when llm, agent, exec, workspace, media, skills.dir or the time zone
// changed (agentChanged); nil when nothing needs rebuilding.
func (d *Daemon) rebuildAgent(old, next *config.Config) (*agent.Agent, error) {
	if !agentChanged(old, next) {
		return nil, nil
	}
	reg, err := toolRegistry(next, d.store, d.log)
	if err != nil {
		return nil, err
	}
	if err := registerEnabled(next, reg, d.sched.ScheduleTool()); err != nil {
		return nil, err
	}
	if err := registerEnabled(next, reg, d.sched.SendMessageTool(d.sendAllowed)); err != nil {
		return nil, err
	}
	if d.tasks != nil { // the runner lives as long as the daemon; its tool moves with the registry
		if err := registerEnabled(next, reg, tools.NewSpawn(d.tasks)); err != nil {
			return nil, err
		}
	}
	a, err := NewAgent(next, AgentDeps{Sessions: d.store, Notes: d.store, Personas: d.personas, Tools: reg, Auditor: d.store,
		OnModelCall: d.metrics.ModelCall, Meter: d.metrics, Now: d.opts.Now}, d.log, d.opts.HTTPClient)
	if err == nil {
		d.core.MCP.Attach(reg, mcpAdmit(next)) // the MCP tools move to the new registry
	}
	return a, err
}

// applyPersonas re-reads the persona files (the directory may have changed
// alone) and applies the persona rules.
func (d *Daemon) applyPersonas(old, next *config.Config, res *ReloadResult) {
	set, perrs, _ := LoadPersonaSet(next, next.ResolvePath(old.Personas.Dir)) // checked in Reload
	res.PersonaErrors = perrs
	res.PersonasLoaded = set.Len()
	if set.Len() > 0 {
		if !slices.Equal(set.Names(), d.personas.Names()) || changed(set, d.personas.Current()) {
			res.Changed = append(res.Changed, "personas")
		}
		d.personas.SetPersonas(set)
	}
	if changed(old.Personas, next.Personas) {
		d.personas.SetRules(next.Personas.ByTarget, next.Personas.ByChannel, next.Personas.Default)
		res.Changed = appendOnce(res.Changed, "personas")
	}
}

// applySchedule hands a changed heartbeat section or jobs list to the
// scheduler, mapped to its own option types.
func (d *Daemon) applySchedule(old, next *config.Config, res *ReloadResult) error {
	if changed(old.Heartbeat, next.Heartbeat) {
		if err := d.sched.SetHeartbeatConfig(heartbeatConfig(next.Heartbeat)); err != nil {
			return err
		}
		res.Changed = append(res.Changed, "heartbeat")
	}
	if changed(old.Jobs, next.Jobs) {
		jobs, err := jobSpecs(next.Jobs)
		if err != nil {
			return err
		}
		if err := d.sched.SetConfigJobs(jobs); err != nil {
			return err
		}
		res.Changed = append(res.Changed, "jobs")
	}
	return nil
}

// restartChannel stops channel name (if running) and starts it again from
// cfg (or leaves it stopped when disabled). Other channels are not touched.
func (d *Daemon) restartChannel(cfg *config.Config, name string) error {
	d.mu.Lock()
	old := d.sups[name]
	runCtx := d.runCtx
	d.mu.Unlock()
	if old != nil {
		old.stop()
		d.mu.Lock()
		delete(d.sups, name)
		d.mu.Unlock()
	}
	if !platformEnabled(cfg, name) {
		d.handler.Unregister(name)
		d.log.Info("channel stopped by config", "channel", name)
		return nil
	}
	ch, err := d.buildPlatform(context.Background(), cfg, name)
	if err != nil {
		return err
	}
	d.handler.Register(ch)
	if runCtx == nil {
		return nil // not running yet: Run starts it
	}
	sup := d.superviseChannel(ch)
	d.mu.Lock()
	d.sups[name] = sup
	d.mu.Unlock()
	sup.start(runCtx)
	d.log.Info("channel restarted with new settings", "channel", name)
	return nil
}

func (d *Daemon) auditReload(ctx context.Context, who, detail string, err error) {
	rec := memory.AuditRecord{Time: d.opts.Now(), Actor: who, Action: "config.reload", Detail: detail}
	if err != nil {
		rec.Error = err.Error()
	}
	if aerr := d.store.Audit(context.WithoutCancel(ctx), rec); aerr != nil {
		d.log.Error("audit", "err", aerr)
	}
}

// watch reloads when config.yaml or a persona file changes.
func (d *Daemon) watch(ctx context.Context) {
	cfg := d.config()
	if cfg.Path == "" || d.opts.NoWatch {
		return
	}
	w, err := config.NewWatcher([]string{cfg.Path}, []string{cfg.ResolvePath(cfg.Personas.Dir)}, d.opts.WatchDebounce, d.log)
	if err != nil {
		d.log.Warn("config changes will need /reload or SIGHUP", "err", err)
		return
	}
	w.Run(ctx, func() {
		_, _ = d.Reload(ctx, "file-watch")
	})
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
