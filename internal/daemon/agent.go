package daemon

import (
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/agent/mcp"
	"github.com/switchboard-bot/switchboard/agent/tools"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/personas"
)

// Core is what every mode needs: the store, the personas, the tool registry
// and the agent. `run` builds channels around it; `ask` uses it alone.
type Core struct {
	Store    memory.Store
	Personas *hub.Resolver
	Tools    *agent.Registry
	Agent    *agent.Agent
	// MCP runs the mcp.servers and keeps their tools in Tools; Close stops
	// them (and their child processes).
	MCP *mcp.Manager
}

// Close stops the MCP servers and closes the store.
func (c *Core) Close() error {
	c.MCP.Close()
	return c.Store.Close()
}

// BuildCore opens the store, loads the personas (writing the defaults on
// first run) and builds the agent with the built-in tools enabled in
// agent.tools. The caller closes Core.Store.
func BuildCore(cfg *config.Config, log *slog.Logger, client *http.Client) (*Core, error) {
	return buildCore(cfg, log, client, nil, nil)
}

// buildCore is BuildCore with the hook told about every model endpoint
// asked (the daemon's metrics).
func buildCore(cfg *config.Config, log *slog.Logger, client *http.Client, onModelCall func(agent.ModelCall), meter UsageMeter) (*Core, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Check the personas first (no file is written for a refused config),
	// then write the defaults of a first run while the store opens: both
	// wait for fsyncs, which on a busy disk take tens to hundreds of
	// milliseconds each (BENCHMARKS.md, "Issue 35").
	dir := cfg.ResolvePath(cfg.Personas.Dir)
	if _, _, err := LoadPersonaSet(cfg, dir); err != nil {
		return nil, err
	}
	type opened struct {
		store memory.Store
		err   error
	}
	storeCh := make(chan opened, 1)
	go func() {
		s, err := OpenStore(cfg, log)
		storeCh <- opened{s, err}
	}()
	set, err := loadPersonas(cfg, dir, log)
	o := <-storeCh
	if err != nil {
		if o.err == nil {
			o.store.Close()
		}
		return nil, err
	}
	if o.err != nil {
		return nil, o.err
	}
	store := o.store
	res := hub.NewResolver(store, set, log)
	res.SetRules(cfg.Personas.ByTarget, cfg.Personas.ByChannel, cfg.Personas.Default)
	reg, err := toolRegistry(cfg, store, log)
	if err != nil {
		store.Close()
		return nil, err
	}
	ag, err := NewAgent(cfg, AgentDeps{Sessions: store, Notes: store, Personas: res, Tools: reg, Auditor: store,
		OnModelCall: onModelCall, Meter: meter}, log, client)
	if err != nil {
		store.Close()
		return nil, err
	}
	m := startMCP(cfg, reg, log)
	return &Core{Store: store, Personas: res, Tools: reg, Agent: ag, MCP: m}, nil
}

// loadPersonas writes the default persona files into dir on first run and
// loads the directory on top of the built-ins; a malformed file is logged
// with file:line and skipped. A persona name or tool the config or a persona
// file refers to that does not exist is an error (see LoadPersonaSet). The
// caller checks the set with LoadPersonaSet before (a refused config leaves
// no files behind: the default personas.dir, ./data/personas, would create
// the data directory); the defaults written here are copies of the
// built-ins that check already counted, so they cannot change its outcome.
func loadPersonas(cfg *config.Config, dir string, log *slog.Logger) (*personas.Set, error) {
	if written, err := personas.WriteDefaults(dir); err != nil {
		log.Warn("could not write the default personas", "dir", dir, "err", err)
	} else if len(written) > 0 {
		log.Info("wrote the default personas", "dir", dir, "files", written)
	}
	set, skipped, err := LoadPersonaSet(cfg, dir)
	for _, e := range skipped {
		log.Warn("persona skipped", "err", e)
	}
	if err != nil {
		return nil, err
	}
	return set, nil
}

// AgentDeps are the agent's collaborators.
type AgentDeps struct {
	Sessions agent.Sessions
	Notes    agent.NotesSource // the chats' long-term notes (and compaction summaries)
	Personas agent.PersonaSource
	Tools    *agent.Registry
	// Approve overrides the approval policy built from agent.require_approval
	// (approval.go); nil = that policy.
	Approve agent.ApproveFunc
	// Auditor records the approval decisions made without asking (jobs).
	Auditor Auditor
	// OnModelCall is told about every model endpoint asked (metrics); nil = nothing.
	OnModelCall func(agent.ModelCall)
	// Meter is told every turn's tokens and every budget refusal (metrics;
	// budget.go); nil = nothing.
	Meter UsageMeter
	// Now is the budget's clock (nil = time.Now).
	Now func() time.Time
}

// NewAgent builds the agent from config: the model endpoint and the loop's limits.
func NewAgent(cfg *config.Config, deps AgentDeps, log *slog.Logger, client *http.Client) (*agent.Agent, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	temp := cfg.LLM.Temperature
	a, err := agent.New(agent.Options{
		BaseURL:           cfg.LLM.BaseURL,
		APIKey:            cfg.LLM.APIKey.Value(),
		Model:             cfg.LLM.Model,
		Temperature:       &temp,
		MaxTokens:         cfg.LLM.MaxTokens,
		Timeout:           cfg.LLM.Timeout,
		MaxRetries:        retries(cfg.LLM.MaxRetries),
		ToolProtocol:      cfg.LLM.ToolProtocol,
		Fallbacks:         fallbacks(cfg.LLM.Fallbacks),
		OnModelCall:       deps.OnModelCall,
		MaxResponseChars:  cfg.LLM.MaxResponseChars,
		MaxIterations:     cfg.Agent.MaxIterations,
		MaxToolCalls:      cfg.Agent.MaxToolCalls,
		ToolRetries:       retries(cfg.Agent.ToolRetries),
		ToolRetryDelay:    cfg.Agent.ToolRetryDelay,
		ToolTimeout:       cfg.Agent.ToolTimeout,
		ObservationMaxLen: cfg.Agent.ObservationMaxLen,
		MaxHistory:        cfg.Agent.MaxHistory,
		TokenBudget:       cfg.Agent.TokenBudget,
		TurnTimeout:       cfg.Agent.TurnTimeout,
		Location:          cfg.Bot.Location(),
		HTTPClient:        client,
		Logger:            log,
		Sessions:          deps.Sessions,
		Notes:             deps.Notes,
		Personas:          deps.Personas,
		Tools:             deps.Tools,
		Approve:           approveFunc(cfg, deps, log),
		Gate:              budgetGate(cfg, deps),
		Workspace:         workspaceOf(deps.Sessions), // the chats' files (exec.go)
		WorkspaceLimits:   workspaceLimits(cfg),
		OnUsage:           onUsage(deps),
		Media:             mediaPreparer(cfg, client, log),
	})
	if err != nil {
		return nil, fmt.Errorf("build the agent: %w", err)
	}
	return a, nil
}

// fallbacks maps llm.fallbacks to the agent's endpoints.
func fallbacks(list []config.Fallback) []agent.Endpoint {
	var out []agent.Endpoint
	for _, f := range list {
		out = append(out, agent.Endpoint{BaseURL: f.BaseURL, APIKey: f.APIKey.Value(), Model: f.Model})
	}
	return out
}

// retries maps a configured count where 0 means "none" to the agent's
// convention (0 = default, negative = none).
func retries(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// toolRegistry registers the built-in tools that agent.tools enables.
func toolRegistry(cfg *config.Config, store memory.Store, log *slog.Logger) (*agent.Registry, error) {
	reg := agent.NewRegistry()
	wf := cfg.Agent.WebFetch
	builtins, err := tools.New(tools.Options{
		Location: cfg.Bot.Location(),
		Logger:   log,
		WebFetch: tools.WebFetchConfig{AllowDomains: wf.AllowDomains, MaxBytes: int64(wf.MaxBytes),
			AllowPrivate: wf.AllowPrivate, Logger: log},
	})
	if err != nil {
		return nil, fmt.Errorf("agent.web_fetch: %w", err)
	}
	builtins = append(builtins, tools.NewMemory(store, tools.MemoryOptions{Location: cfg.Bot.Location()}))
	builtins = append(builtins, tools.NewFiles(tools.FilesOptions{MaxOutput: cfg.Agent.ObservationMaxLen})...)
	builtins = append(builtins, tools.NewSendFile()) // chat turns only: the hub queues its files (channels/hub/sendfile.go)
	extra, err := searchAndSkills(cfg, log)
	if err != nil {
		return nil, err
	}
	builtins = append(builtins, extra...)
	if ex, err := execTool(cfg, log); err != nil { // exec.go
		return nil, err
	} else if ex != nil {
		builtins = append(builtins, ex)
	}
	for _, t := range builtins {
		if err := registerEnabled(cfg, reg, t); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

func registerEnabled(cfg *config.Config, reg *agent.Registry, t agent.Tool) error {
	if !slices.Contains(cfg.Agent.Tools, t.Name()) {
		return nil
	}
	if err := reg.Register(t); err != nil {
		return fmt.Errorf("register tool %s: %w", t.Name(), err)
	}
	return nil
}
