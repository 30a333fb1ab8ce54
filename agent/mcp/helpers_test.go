package mcp

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-bot/switchboard/agent"
)

// The test binary doubles as a stdio MCP server (built with the go-sdk's
// own server package) when SWITCHBOARD_MCP_TEST_SERVER is set.
func TestMain(m *testing.M) {
	if os.Getenv("SWITCHBOARD_MCP_TEST_SERVER") == "1" {
		srv, _ := NewTestServer()
		if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// stdioConfig runs this test binary as a stdio MCP server.
func stdioConfig(t *testing.T) ServerConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return ServerConfig{Command: exe, Args: []string{"-test.run=^$"}, Env: map[string]string{"SWITCHBOARD_MCP_TEST_SERVER": "1"},
		Timeout: 10 * time.Second}
}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

// TestCalls counts the calls the in-process server received.
type TestCalls struct{ Echo atomic.Int64 }

// NewTestServer is an MCP server with an echo tool (read-only), a failing
// tool (isError), an image tool and a structured-output tool.
func NewTestServer() (*sdk.Server, *TestCalls) {
	calls := &TestCalls{}
	s := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text back.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			calls.Echo.Add(1)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	f := false
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: &f}},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, errors.New("the disk is full")
		})
	sdk.AddTool(s, &sdk.Tool{Name: "image", Description: "A tiny image."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "here:"},
				&sdk.ImageContent{MIMEType: "image/png", Data: []byte("12345678")}}}, nil, nil
		})
	type sum struct {
		Sum int `json:"sum"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "add.numbers", Description: "Add a and b."},
		func(_ context.Context, _ *sdk.CallToolRequest, in struct{ A, B int }) (*sdk.CallToolResult, sum, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, sum{in.A + in.B}, nil
		})
	return s, calls
}

// inProcess is a Transport factory connecting to srv in memory.
func inProcess(t *testing.T, srv *sdk.Server) func() sdk.Transport {
	return func() sdk.Transport {
		ct, st := sdk.NewInMemoryTransports()
		if _, err := srv.Connect(context.Background(), st, nil); err != nil {
			t.Errorf("server connect: %v", err)
		}
		return ct
	}
}

func newManager(t *testing.T, reg *agent.Registry) *Manager {
	t.Helper()
	m := New(Options{Registry: reg, MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	t.Cleanup(m.Close)
	return m
}

// waitHang bounds every wait for something the test caused (servers ready,
// a refresh, a tool call): a hang detector, not a performance bound (a
// server starts in well under a second on a quiet machine, in seconds on a
// loaded one).
const waitHang = time.Minute

func waitReady(t *testing.T, m *Manager) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitHang)
	defer cancel()
	if !m.WaitReady(ctx) {
		t.Fatalf("servers not ready: %+v", m.Status())
	}
}

// waitUntil polls cond (bounded) — for states reached asynchronously.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitHang)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid exists (and is not a zombie).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) < 3 || f[2] != "Z"
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

func call(t *testing.T, reg *agent.Registry, name, args string) (string, error) {
	t.Helper()
	tool, ok := reg.Get(name)
	if !ok {
		t.Fatalf("tool %q not registered; have %v", name, reg.Names())
	}
	if err := reg.Validate(name, []byte(args)); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitHang)
	defer cancel()
	return tool.Call(ctx, []byte(args))
}
