package mcp

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-bot/switchboard/agent"
)

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// collidingServer lists tools whose names map to one <server>__<tool>
// name: get_data and get.data (the first needs no change), list.items and
// list/items (both changed), plus add.numbers (changed, alone) and a name
// too long to offer. Each tool answers with its own name.
func collidingServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "collide", Version: "1"}, nil)
	for _, name := range []string{"get.data", "get_data", "list/items", "list.items", "add.numbers", strings.Repeat("long", 17)} {
		sdk.AddTool(s, &sdk.Tool{Name: name, Description: "The tool " + name + "."},
			func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "called " + name}}}, nil, nil
			})
	}
	return s
}

// Issue 27 (6): two tools of a server that map to one agent name are never
// silently dropped or called by the wrong name. A tool whose name needed
// no change keeps it and the other is refused; when both were changed,
// both are refused. Each refusal is a warning naming both tools, and the
// status lists refused tools with the reason and renamed ones with the
// server's own name.
func TestCollidingToolNames(t *testing.T) {
	var logs syncBuf
	reg := agent.NewRegistry()
	m := New(Options{Registry: reg, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	t.Cleanup(m.Close)
	m.Apply(map[string]ServerConfig{"s": {Transport: inProcess(t, collidingServer())}})
	waitReady(t, m)

	if got, want := strings.Join(reg.Names(), ","), "s__add_numbers,s__get_data"; got != want {
		t.Fatalf("registered %s, want %s", got, want)
	}
	if got, err := call(t, reg, "s__get_data", `{}`); err != nil || got != "called get_data" {
		t.Fatalf("s__get_data = %q, %v; want the server's get_data", got, err)
	}
	if got, err := call(t, reg, "s__add_numbers", `{}`); err != nil || got != "called add.numbers" {
		t.Fatalf("s__add_numbers = %q, %v", got, err)
	}

	st := m.Status()
	if len(st) != 1 {
		t.Fatalf("status %+v", st)
	}
	s := st[0]
	if got := strings.Join(s.Tools, ","); got != "s__add_numbers,s__get_data" {
		t.Fatalf("status tools %s", got)
	}
	if len(s.Renamed) != 1 || s.Renamed["s__add_numbers"] != "add.numbers" {
		t.Fatalf("renamed %v", s.Renamed)
	}
	var refused []string
	for _, r := range s.Refused {
		refused = append(refused, r.Tool+" -> "+r.Name+": "+r.Reason)
	}
	long := strings.Repeat("long", 17)
	want := []string{
		`get.data -> s__get_data: its name would be s__get_data, which "get_data" has`,
		`list.items -> s__list_items: "list.items" and "list/items" would both be s__list_items; neither is offered`,
		`list/items -> s__list_items: "list.items" and "list/items" would both be s__list_items; neither is offered`,
		long + ` -> s__` + long + `: the name s__` + long + ` is longer than 64 characters`,
	}
	if strings.Join(refused, "\n") != strings.Join(want, "\n") {
		t.Fatalf("refused:\n%s\nwant:\n%s", strings.Join(refused, "\n"), strings.Join(want, "\n"))
	}
	out := logs.String()
	for _, w := range []string{
		`level=WARN msg="MCP tool refused: its name collides" mcp_server=s tool=get.data name=s__get_data with=get_data`,
		`level=WARN msg="MCP tool refused: its name collides" mcp_server=s tool=list.items name=s__list_items with=list/items`,
		`level=WARN msg="MCP tool refused: its name collides" mcp_server=s tool=list/items name=s__list_items with=list.items`,
	} {
		if !strings.Contains(out, w) {
			t.Errorf("logs lack %s", w)
		}
	}
	if t.Failed() {
		t.Fatalf("logs:\n%s", out)
	}
}
