package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/agent/mcp"
	"github.com/switchboard-bot/switchboard/internal/daemon"
)

// mcpProbeLimit bounds `mcp list` when it connects to the servers itself.
const mcpProbeLimit = 2 * time.Minute

func (a *app) mcpCmd() *cobra.Command {
	c := &cobra.Command{Use: "mcp", Short: "MCP (Model Context Protocol) tool servers", Args: cobra.NoArgs}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the MCP servers of mcp.servers: state and tools (from the running daemon, else by connecting to them)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, remote, err := a.locate(dataOptional)
			if err != nil {
				return err
			}
			var st []mcp.ServerStatus
			source, from := "connected to each server (no daemon running)", "probe"
			if remote != nil {
				ctx, cancel := context.WithTimeout(cmd.Context(), statusTimeout)
				defer cancel()
				if err := remote.call(ctx, "GET", "/admin/mcp", nil, &st); err != nil {
					return err
				}
				source, from = "from the running daemon", "daemon"
			} else {
				ctx, cancel := context.WithTimeout(cmd.Context(), mcpProbeLimit)
				defer cancel()
				st = daemon.ProbeMCP(ctx, cfg, a.logger(cfg, levelWarn))
			}
			for name, s := range cfg.MCP.Servers {
				if !s.Enabled {
					st = append(st, mcp.ServerStatus{Name: name, State: "disabled"})
				}
			}
			slices.SortFunc(st, func(x, y mcp.ServerStatus) int { return strings.Compare(x.Name, y.Name) })
			if asJSON {
				for i := range st {
					st[i].Tools, st[i].Offered = nonNil(st[i].Tools), nonNil(st[i].Offered)
				}
				return a.writeJSON(mcpJSON{Source: from, Servers: nonNil(st)})
			}
			writeMCPList(a.listOut(), source, st)
			return nil
		},
	}
	addJSONFlag(list, &asJSON)
	c.AddCommand(list)
	return c
}

// writeMCPList prints one block per server: name, state, error, tools
// under the name the model sees (with the server's own name when it
// differs; tools agent.tools does not admit are marked), then the tools
// that are not offered at all, with the reason.
func writeMCPList(w io.Writer, source string, st []mcp.ServerStatus) {
	if len(st) == 0 {
		fmt.Fprintln(w, "no MCP servers configured (mcp.servers in config.yaml)")
		return
	}
	fmt.Fprintf(w, "MCP servers (%s):\n", source)
	for _, s := range st {
		line := fmt.Sprintf("%s: %s", s.Name, s.State)
		if s.PID > 0 {
			line += fmt.Sprintf(" (pid %d)", s.PID)
		}
		if s.Restarts > 0 {
			line += fmt.Sprintf(" (%d restarts)", s.Restarts)
		}
		if s.Error != "" {
			line += " — " + s.Error
		}
		fmt.Fprintln(w, line)
		for _, t := range s.Tools {
			note := ""
			if orig, ok := s.Renamed[t]; ok {
				note += fmt.Sprintf("  (the server's %q)", orig)
			}
			if !slices.Contains(s.Offered, t) {
				note += "  (not offered: agent.tools does not list it; add \"" + s.Name + "__*\" or the name)"
			}
			fmt.Fprintf(w, "  %s%s\n", t, note)
		}
		collide := false
		for _, r := range s.Refused {
			fmt.Fprintf(w, "  refused %q: %s\n", r.Tool, r.Reason)
			collide = collide || len(r.With) > 0
		}
		if collide {
			fmt.Fprintf(w, "  (to choose between tools whose names collide, list the one to use in mcp.servers.%s.tools)\n", s.Name)
		}
	}
}
