package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// collidingMCP serves, over Streamable HTTP, tools whose names map to one
// <server>__<tool> name (get_data / get.data, list.items / list/items),
// one renamed tool (add.numbers) and one name too long to offer.
func collidingMCP(t *testing.T) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "collide", Version: "1"}, nil)
	for _, name := range []string{"get.data", "get_data", "list/items", "list.items", "add.numbers", strings.Repeat("long", 17)} {
		sdk.AddTool(srv, &sdk.Tool{Name: name, Description: "The tool " + name + "."},
			func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name}}}, nil, nil
			})
	}
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
	return ts.URL
}

// Issue 27 (6): `mcp list` shows the name each tool is offered under next
// to the server's own name when they differ, and every refused tool with
// the reason (two names that map to one, a name too long), with the daemon
// stopped and through the running daemon alike.
func TestBinaryMCPListCollidingTools(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	addr := freePort(t)
	cfg := writeConfig(t, fmt.Sprintf(`bot:
  data_dir: ./data
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
agent:
  tools: [current_time, "collide__*"]
channels:
  console:
    enabled: false
server:
  listen: %s
mcp:
  servers:
    collide:
      url: %s
      timeout: 10s
`, llm.URL, addr, collidingMCP(t)))
	env := cleanEnv("SB_E2E_KEY=" + e2eKey)
	long := strings.Repeat("long", 17)
	want := `collide: ready
  collide__add_numbers  (the server's "add.numbers")
  collide__get_data
  refused "get.data": its name would be collide__get_data, which "get_data" has
  refused "list.items": "list.items" and "list/items" would both be collide__list_items; neither is offered
  refused "list/items": "list.items" and "list/items" would both be collide__list_items; neither is offered
  refused "` + long + `": the name collide__` + long + ` is longer than 64 characters
  (to choose between tools whose names collide, list the one to use in mcp.servers.collide.tools)
`
	r := runBin(t, env, "--config", cfg, "mcp", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "connected to each server") || !strings.Contains(r.stdout, want) {
		t.Fatalf("mcp list without a daemon: exit %d\n%s\nwant:\n%s\nstderr:\n%s", r.code, r.stdout, want, r.stderr)
	}

	daemon, logs := startBinDaemon(t, cfg, addr, env)
	defer func() {
		_ = daemon.Process.Signal(syscall.SIGTERM)
		_ = daemon.Wait()
	}()
	r = runBin(t, env, "--config", cfg, "mcp", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "from the running daemon") || !strings.Contains(r.stdout, want) {
		t.Fatalf("mcp list with the daemon: exit %d\n%s\nwant:\n%s\nstderr:\n%s\ndaemon log:\n%s", r.code, r.stdout, want, r.stderr, logs.String())
	}
}
