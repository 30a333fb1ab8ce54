package ui

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/switchboard-bot/switchboard/internal/logring"
)

// Operations is what the Logs, Skills, MCP servers and Channels pages
// (issue 34) need of the running daemon, beside Backend. A Backend that does
// not implement it gets pages that say so.
type Operations interface {
	// LogTail is up to n of the daemon's last log records at or above
	// level, oldest first, every secret of the config already scrubbed.
	LogTail(level slog.Level, n int) []logring.Record
	// LogChanged is closed when the next log record arrives.
	LogChanged() <-chan struct{}
	// Skills is the skill library of skills.dir as it reads now.
	Skills() SkillsState
	// MCPServers is every server of mcp.servers (disabled ones too).
	MCPServers() []MCPServer
	// RestartMCP restarts one running server (an error names what is wrong).
	RestartMCP(name string) error
	// Platforms is every platform of the registry, then any other channel
	// the daemon runs (the web console's own), with their state.
	Platforms() []PlatformState
}

// SkillsState is the skills directory as the Skills page shows it.
type SkillsState struct {
	Dir      string
	Skills   []SkillInfo
	Problems []string // validation errors, "file:line: message"
}

// SkillInfo is one valid skill.
type SkillInfo struct {
	Name, Description string
	File              string
	Body              string // the instructions after the front matter
}

// MCPServer is one server of mcp.servers.
type MCPServer struct {
	Name      string
	Enabled   bool
	Transport string // "stdio" or "http"
	State     string // starting, ready, restarting, stopped; "disabled"
	Error     string // the last error, redacted
	Restarts  int
	PID       int
	Tools     []MCPTool
}

// MCPTool is one tool a server lists.
type MCPTool struct {
	Name        string // <server>__<tool>
	Description string // the server's text: shown as text
	Offered     bool   // agent.tools admits it
}

// PlatformState is one channel as the Channels page shows it.
type PlatformState struct {
	Name     string
	Platform bool // a platform of the registry (it has a config section)
	Enabled  bool
	// State: off (not enabled), ready, connecting (running, not ready yet),
	// failed (stopped on an error, restarting after a backoff), standby
	// (another replica runs it), not running (enabled, not started).
	State     string
	Restarts  int
	LastErr   string // redacted
	LastErrAt time.Time
}

// ops is the backend's Operations, or nil with a page that says why.
func (s *Server) ops(w http.ResponseWriter, r *http.Request) Operations {
	if o, ok := s.o.Backend.(Operations); ok {
		return o
	}
	s.render(w, r, http.StatusNotImplemented, "message", messageData{Title: "Not available",
		Text: "This daemon does not report this part of its state."})
	return nil
}
