package doctor

import (
	"context"
	"fmt"

	"github.com/switchboard-bot/switchboard/agent/mcp"
	"github.com/switchboard-bot/switchboard/internal/daemon"
)

// CheckMCP connects to every enabled server of mcp.servers and lists its
// tools (reported only when mcp.servers is set).
const CheckMCP = "mcp servers"

func (d *doctor) checkMCP(ctx context.Context) Result {
	var f finding
	for _, st := range daemon.ProbeMCP(ctx, d.cfg, d.log) {
		key := "mcp.servers." + st.Name
		switch {
		case st.State != mcp.StateReady:
			what := fmt.Sprintf("%s: cannot connect", st.Name)
			if st.Error != "" {
				what += ": " + st.Error
			} else {
				what += " (no answer within the check's timeout)"
			}
			f.add(StatusFail, what, fmt.Sprintf("check %s (command and args, or url and headers) and that the server starts by hand; `switchboard mcp list` retries", key))
		case len(st.Tools) == 0:
			f.add(StatusWarn, st.Name+": connected, but it lists no tools", fmt.Sprintf("check %s.tools (its allowlist) against the server's tool names", key))
		case len(st.Offered) == 0:
			f.add(StatusWarn, fmt.Sprintf("%s: %d tools, none offered to the model", st.Name, len(st.Tools)),
				fmt.Sprintf("add \"%s__*\" (or single tool names) to agent.tools", st.Name))
		default:
			f.add(StatusOK, fmt.Sprintf("%s: %d tools (%d offered)", st.Name, len(st.Tools), len(st.Offered)), "")
		}
	}
	for _, name := range d.cfg.MCP.ServerNames() {
		if !d.cfg.MCP.Servers[name].Enabled {
			f.add(StatusOK, name+": disabled", "")
		}
	}
	return f.result(CheckMCP)
}
