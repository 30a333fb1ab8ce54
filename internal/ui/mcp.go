package ui

import (
	"net/http"
	"strings"
)

// The MCP servers page (issue 34): every server of mcp.servers with its
// state (starting, ready, restarting after a failure with the last error,
// stopped, disabled), restarts, process id, and its tools with the
// server's descriptions — shown as text, a server's text is not trusted —
// and whether agent.tools offers each. A restart button (POST, CSRF) ends
// the server's connection and process and connects again at once; it is
// audited.

type mcpData struct {
	Servers []MCPServer
}

func (s *Server) mcpPage(w http.ResponseWriter, r *http.Request) {
	ops := s.ops(w, r)
	if ops == nil {
		return
	}
	s.render(w, r, http.StatusOK, "mcp", mcpData{Servers: ops.MCPServers()})
}

func (s *Server) mcpRestart(w http.ResponseWriter, r *http.Request) {
	ops := s.ops(w, r)
	if ops == nil {
		return
	}
	name := strings.TrimSpace(r.PostFormValue("name"))
	if err := ops.RestartMCP(name); err != nil {
		s.audit(r.Context(), "mcp.restart", "", name, err.Error())
		s.redirect(w, r, "/ui/mcp", "Not restarted: "+err.Error())
		return
	}
	s.audit(r.Context(), "mcp.restart", "", name, "")
	s.redirect(w, r, "/ui/mcp", "Restarting MCP server "+name+".")
}
