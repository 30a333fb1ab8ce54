package mcp

import (
	"fmt"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// RefusedTool is a tool a server lists that is not offered, and why.
type RefusedTool struct {
	Tool   string   `json:"tool"`           // the server's own name for it
	Name   string   `json:"name,omitempty"` // the <server>__<tool> name it would have had
	Reason string   `json:"reason"`
	With   []string `json:"with,omitempty"` // the server's tools it collides with (same Name)
}

// buildTools turns a server's tool definitions into agent tools, sorted by
// name, and the refused ones, sorted by the server's name.
//
// Names that collide: toolName replaces characters outside [a-zA-Z0-9_-],
// so two tools (get_data and get.data) can map to one <server>__<tool>
// name. The registry cannot hold both, and picking either silently would
// let the model call a tool it was not shown. So a tool whose name needed
// no change keeps it (its name is exactly the server's; a tool listed
// later cannot take it away) and the others are refused; when every one of
// them was changed, all are refused. Each refusal is a warning naming the
// tools involved, and Status lists it.
func (s *server) buildTools(defs []*sdk.Tool) ([]*Tool, []RefusedTool) {
	defs = slices.Clone(defs)
	slices.SortStableFunc(defs, func(a, b *sdk.Tool) int { return strings.Compare(a.Name, b.Name) })
	var (
		refused []RefusedTool
		groups  = map[string][]*Tool{}
	)
	for _, def := range defs {
		t, err := newTool(s, def)
		if err != nil {
			name, _ := toolName(s.name, def.Name)
			refused = append(refused, RefusedTool{Tool: def.Name, Name: name, Reason: err.Error()})
			s.log.Warn("MCP tool refused", "tool", def.Name, "reason", err.Error())
			continue
		}
		groups[t.name] = append(groups[t.name], t)
	}
	var tools []*Tool
	for name, group := range groups {
		if len(group) == 1 {
			tools = append(tools, group[0])
			continue
		}
		var keep *Tool
		for _, t := range group {
			if !t.renamed() {
				keep = t // at most one: a server lists a name once
			}
		}
		if keep != nil && slices.ContainsFunc(group, func(t *Tool) bool { return t != keep && !t.renamed() }) {
			keep = nil // the same name listed twice: neither definition is trusted
		}
		remotes := make([]string, len(group))
		for i, t := range group {
			remotes[i] = t.remote
		}
		for _, t := range group {
			if t == keep {
				tools = append(tools, t)
				continue
			}
			var (
				reason string
				with   []string
			)
			if keep != nil {
				reason = fmt.Sprintf("its name would be %s, which %q has", name, keep.remote)
				with = []string{keep.remote}
			} else {
				reason = fmt.Sprintf("%s would %s be %s; %s offered", quoteList(remotes), bothOrAll(len(remotes)), name,
					neitherOrNone(len(remotes)))
				with = slices.DeleteFunc(slices.Clone(remotes), func(r string) bool { return r == t.remote })
			}
			refused = append(refused, RefusedTool{Tool: t.remote, Name: name, Reason: reason, With: with})
			s.log.Warn("MCP tool refused: its name collides", "tool", t.remote, "name", name,
				"with", strings.Join(with, ", "))
		}
	}
	slices.SortFunc(tools, func(a, b *Tool) int { return strings.Compare(a.name, b.name) })
	slices.SortStableFunc(refused, func(a, b RefusedTool) int { return strings.Compare(a.Tool, b.Tool) })
	return tools, refused
}

// renamed reports whether the tool's name is not the server's name for it
// behind the "<server>__" prefix (a character was replaced).
func (t *Tool) renamed() bool {
	return t.name != t.srv.name+Sep+t.remote
}

// quoteList writes `"a" and "b"` or `"a", "b" and "c"`.
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

func bothOrAll(n int) string {
	if n == 2 {
		return "both"
	}
	return "all"
}

func neitherOrNone(n int) string {
	if n == 2 {
		return "neither is"
	}
	return "none is"
}
