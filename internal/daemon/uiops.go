package daemon

// The console's Logs, Skills, MCP servers and Channels pages (issue 34):
// consoleBackend's side of ui.Operations.

import (
	"errors"
	"log/slog"
	"slices"
	"sort"

	"github.com/switchboard-bot/switchboard/agent/mcp"
	"github.com/switchboard-bot/switchboard/agent/skills"
	"github.com/switchboard-bot/switchboard/internal/logring"
	"github.com/switchboard-bot/switchboard/internal/ui"
)

var _ ui.Operations = consoleBackend{}

func (b consoleBackend) LogTail(level slog.Level, n int) []logring.Record {
	return b.d.LogTail(level, n)
}
func (b consoleBackend) LogChanged() <-chan struct{} { return b.d.LogChanged() }

// scrub is text as the console may show it: the log ring's scrubbing (the
// config's secrets, ${ENV} values, URL credentials).
func (b consoleBackend) scrub(text string) string {
	if b.d.logs == nil || text == "" {
		return text
	}
	return b.d.logs.scrub(text)
}

// Skills reads skills.dir as the skill tool does (its own read, so the page
// shows the files as they are now; problems are not logged again).
func (b consoleBackend) Skills() ui.SkillsState {
	cfg := b.d.config()
	lib := skills.NewLibrary(cfg.ResolvePath(cfg.Skills.Dir), skills.Options{ReloadInterval: -1})
	st := ui.SkillsState{Dir: lib.Dir()}
	for _, sk := range lib.Skills() {
		st.Skills = append(st.Skills, ui.SkillInfo{Name: sk.Name, Description: sk.Description, File: sk.File, Body: sk.Body})
	}
	for _, err := range lib.Problems() {
		st.Problems = append(st.Problems, b.scrub(err.Error()))
	}
	return st
}

// MCPServers is every server of mcp.servers: the running ones with their
// state and tools, the disabled ones as such.
func (b consoleBackend) MCPServers() []ui.MCPServer {
	cfg := b.d.config()
	m := b.d.core.MCP
	running := map[string]mcp.ServerStatus{}
	for _, st := range m.Status() {
		running[st.Name] = st
	}
	out := make([]ui.MCPServer, 0, len(cfg.MCP.Servers))
	for name, sc := range cfg.MCP.Servers {
		s := ui.MCPServer{Name: name, Enabled: sc.Enabled, Transport: "stdio", State: "disabled"}
		if sc.URL != "" {
			s.Transport = "http"
		}
		if st, ok := running[name]; ok {
			s.State, s.Error, s.Restarts, s.PID = string(st.State), b.scrub(st.Error), st.Restarts, st.PID
			for _, t := range m.Tools(name) {
				s.Tools = append(s.Tools, ui.MCPTool{Name: t.Name, Description: b.scrub(t.Description),
					Offered: slices.Contains(st.Offered, t.Name)})
			}
		} else if sc.Enabled {
			s.State = string(mcp.StateStopped)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// RestartMCP restarts a running server of mcp.servers.
func (b consoleBackend) RestartMCP(name string) error {
	err := b.d.core.MCP.Restart(name)
	if errors.Is(err, mcp.ErrUnknownServer) {
		return errors.New("no running MCP server of that name (is it in mcp.servers and enabled?)")
	}
	if err == nil {
		b.d.log.Info("MCP server restart asked in the console", "mcp_server", name)
	}
	return err
}

// Platforms is every platform of the registry in its order, then the other
// channels the daemon runs (the web console's, extra ones), each with its
// supervisor's state.
func (b consoleBackend) Platforms() []ui.PlatformState {
	cfg := b.d.config()
	states := b.d.ChannelStates()
	var out []ui.PlatformState
	seen := map[string]bool{}
	add := func(name string, platform, enabled bool) {
		seen[name] = true
		p := ui.PlatformState{Name: name, Platform: platform, Enabled: enabled, State: "off"}
		st, running := states[name]
		switch {
		case running:
			p.Enabled = true
			p.Restarts, p.LastErr, p.LastErrAt = st.Restarts, b.scrub(st.LastErr), st.LastErrAt
			switch {
			case st.Standby:
				p.State = "standby"
			case st.Ready:
				p.State = "ready"
			case st.Running:
				p.State = "connecting"
			default:
				p.State = "failed"
			}
		case enabled:
			p.State = "not running"
		}
		out = append(out, p)
	}
	for _, name := range cfg.Platforms().Names() {
		add(name, true, cfg.Channels.Enabled(name))
	}
	var others []string
	for name := range states {
		if !seen[name] {
			others = append(others, name)
		}
	}
	sort.Strings(others)
	for _, name := range others {
		add(name, false, true)
	}
	return out
}
