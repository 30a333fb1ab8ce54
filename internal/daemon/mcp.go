package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/agent/mcp"
	"github.com/switchboard-bot/switchboard/internal/config"
)

// mcpStartWait bounds how long startup waits for the MCP servers to list
// their tools (a slow server keeps connecting in the background).
const mcpStartWait = 15 * time.Second

// mcpConfigs maps the enabled servers of mcp.servers to the client's
// configs (secrets in clear, cwd resolved against the config file).
func mcpConfigs(cfg *config.Config) map[string]mcp.ServerConfig {
	out := map[string]mcp.ServerConfig{}
	for name, s := range cfg.MCP.Servers {
		if !s.Enabled {
			continue
		}
		c := mcp.ServerConfig{Command: s.Command, Args: s.Args, URL: s.URL, Timeout: s.EffectiveTimeout(), Tools: s.Tools}
		if s.Cwd != "" {
			c.Cwd = cfg.ResolvePath(s.Cwd)
		}
		c.Env = secretValues(s.Env)
		c.Headers = secretValues(s.Headers)
		out[name] = c
	}
	return out
}

func secretValues(m map[string]config.Secret) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v.Value()
	}
	return out
}

// mcpAdmit is agent.tools as a check on MCP tool names (globs allowed).
func mcpAdmit(cfg *config.Config) func(string) bool {
	tools := cfg.Agent.Tools
	return func(name string) bool { return agent.AllowedBy(tools, name) }
}

// startMCP starts the configured MCP servers with their tools published
// into reg, and waits (bounded) for them to connect so the first turn
// already has their tools.
func startMCP(cfg *config.Config, reg *agent.Registry, log *slog.Logger) *mcp.Manager {
	m := mcp.New(mcp.Options{Registry: reg, Admit: mcpAdmit(cfg), Logger: log})
	cfgs := mcpConfigs(cfg)
	if len(cfgs) == 0 {
		return m
	}
	m.Apply(cfgs)
	wait := time.Duration(0)
	for _, c := range cfgs {
		wait = max(wait, c.Timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(wait, mcpStartWait))
	defer cancel()
	if !m.WaitReady(ctx) {
		for _, st := range m.Status() {
			if st.State != mcp.StateReady {
				log.Warn("MCP server not ready at startup; it keeps retrying", "mcp_server", st.Name, "state", st.State, "err", st.Error)
			}
		}
	}
	return m
}

// MCPStatus reports the MCP servers (for the admin API and `mcp list`).
func (d *Daemon) MCPStatus() []mcp.ServerStatus { return d.core.MCP.Status() }

// ProbeMCP connects to every enabled server of mcp.servers (as the daemon
// would), waits until each has listed its tools or its timeout passed
// (bounded by ctx), and returns their status; every server it started is
// stopped before it returns. For `switchboard mcp list` without a running
// daemon and for `doctor`.
func ProbeMCP(ctx context.Context, cfg *config.Config, log *slog.Logger) []mcp.ServerStatus {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfgs := mcpConfigs(cfg)
	m := mcp.New(mcp.Options{Registry: agent.NewRegistry(), Admit: mcpAdmit(cfg), Logger: log,
		MinBackoff: time.Hour}) // one attempt each: a probe does not retry
	defer m.Close()
	m.Apply(cfgs)
	wait := time.Duration(0)
	for _, c := range cfgs {
		wait = max(wait, c.Timeout)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	m.WaitSettled(wctx)
	return m.Status()
}

func (d *Daemon) serveMCP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(d.MCPStatus())
}
