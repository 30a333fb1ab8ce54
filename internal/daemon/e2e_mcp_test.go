package daemon

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	openai "github.com/sashabaranov/go-openai"

	"github.com/switchboard-bot/switchboard/agent/mcp"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// goSDKServer is an MCP server built with the go-sdk's own server package,
// served in process over Streamable HTTP. echoCalls counts the calls that
// reached it.
func goSDKServer(t *testing.T) (url string, echoCalls *atomic.Int64) {
	t.Helper()
	echoCalls = &atomic.Int64{}
	srv := sdk.NewServer(&sdk.Implementation{Name: "gosdk", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Echo the text.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, // no approval needed (see agent.Annotated)
		func(_ context.Context, _ *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
			echoCalls.Add(1)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + a.Text}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "fail", Description: "Not admitted by agent.tools."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() }) // the client's SSE stream may still be open
	return ts.URL, echoCalls
}

// toolThenAnswer is a model that calls tool with the arguments its user
// message names ("call <args>"), and answers "tool said: <result>" once
// the result is back.
func toolThenAnswer(tool string) fakellm.Responder {
	return func(r *fakellm.Request) fakellm.Response {
		last := r.LastMessage()
		if last.Role == openai.ChatMessageRoleTool {
			return fakellm.Response{Content: "tool said: " + unwrapToolOutput(fakellm.MessageText(last)) + " (end)"}
		}
		args, _ := strings.CutPrefix(r.LastUserText(), "call ")
		return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: tool, Arguments: args}}}
	}
}

// unwrapToolOutput returns the observation inside the agent's
// <tool-output ...> wrapper, with its status.
func unwrapToolOutput(s string) string {
	head, rest, ok := strings.Cut(s, "\n")
	if !ok {
		return s
	}
	status := ""
	if _, after, ok := strings.Cut(head, `status="`); ok {
		status, _, _ = strings.Cut(after, `"`)
	}
	body, _, _ := strings.Cut(rest, "\n</tool-output>")
	return "[" + status + "] " + body
}

// turn sends text and waits for the n-th answer in chat to contain want.
func (l *liveDaemon) turn(chat, text string, n int, want string) string {
	l.t.Helper()
	if err := l.mem.Say(context.Background(), channels.Message{ChatID: chat, Direct: true,
		Sender: channels.Sender{ID: "ann", Name: "Ann"}, Text: text}); err != nil {
		l.t.Fatalf("say: %v", err)
	}
	got := l.mem.WaitFor(l.t, "memory:"+chat, waitFor, "answer containing "+want, func(s []console.Sent) bool {
		return len(s) >= n && strings.Contains(s[n-1].Text, want) && strings.HasSuffix(s[n-1].Text, "(end)")
	})
	return got[n-1].Text
}

// Issue 16 end to end with an in-process go-sdk server over Streamable
// HTTP: the model is offered only the MCP tools agent.tools admits (a
// glob), a bad argument is refused before the server is called, the next
// model request carries the result and the answer reaches the chat.
func TestMCPGoSDKServerEndToEnd(t *testing.T) {
	url, calls := goSDKServer(t)
	llm := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
		last := r.LastMessage()
		if last.Role == openai.ChatMessageRoleTool && strings.Contains(fakellm.MessageText(last), "schema") {
			return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "gosdk__echo", Arguments: `{"text":"hi"}`}}}
		}
		return toolThenAnswer("gosdk__echo")(r)
	})
	cfg := baseConfig + `agent:
  tools: [current_time, "gosdk__e*"]
mcp:
  servers:
    gosdk:
      url: ` + url + `
      headers:
        Authorization: Bearer mcp-header-secret-123
`
	l := startLive(t, llm, cfg, false)
	got := l.turn("c1", `call {"text":5}`, 1, "tool said:")
	if got != "tool said: [ok] echo: hi (end)" {
		t.Fatalf("answer %q", got)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the server got %d calls, want 1: the bad argument must be refused before the call", n)
	}
	reqs := llm.Requests()
	if names := reqs[0].ToolNames(); !slices.Contains(names, "gosdk__echo") || slices.Contains(names, "gosdk__fail") {
		t.Fatalf("tools offered: %v", names)
	}
	if res := fakellm.MessageText(reqs[1].LastMessage()); !strings.Contains(res, "arguments do not match the schema") {
		t.Fatalf("second request's tool result: %q", res)
	}
	if res := unwrapToolOutput(fakellm.MessageText(reqs[2].LastMessage())); res != "[ok] echo: hi" {
		t.Fatalf("third request's tool result: %q", res)
	}
	st := l.d.MCPStatus()
	if len(st) != 1 || st[0].State != mcp.StateReady || !slices.Equal(st[0].Offered, []string{"gosdk__echo"}) {
		t.Fatalf("status %+v", st)
	}
}

func everythingBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SWITCHBOARD_MCP_EVERYTHING")
	if bin == "" {
		t.Skip("SWITCHBOARD_MCP_EVERYTHING is not set (npm install --prefix DIR @modelcontextprotocol/server-everything; .ci/run does)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	return bin
}

func alivePID(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	f := strings.Fields(string(b))
	return err != nil || len(f) < 3 || f[2] != "Z"
}

func everythingPID(t *testing.T, l *liveDaemon) int {
	t.Helper()
	for _, s := range l.d.MCPStatus() {
		if s.Name == "everything" && s.State == mcp.StateReady {
			return s.PID
		}
	}
	return 0
}

// server-everything over stdio: killed mid-conversation, the next call
// answers "unavailable", the server is restarted and the call after works;
// a reload that adds a server leaves it running; no child survives the
// daemon.
func TestMCPServerEverythingStdioKilledAndRestarted(t *testing.T) {
	bin := everythingBin(t)
	llm := fakellm.Start(t, toolThenAnswer("everything__echo"))
	cfg := baseConfig + `agent:
  tools: [current_time, "everything__*", "gosdk__*"]
mcp:
  servers:
    everything:
      command: ` + bin + `
      args: [stdio]
      timeout: 20s
`
	var pid, pid2 int
	t.Cleanup(func() { // runs after the daemon stopped (cleanups run last first)
		if alivePID(pid) || alivePID(pid2) {
			t.Errorf("an MCP child survives the daemon: %d %v, %d %v", pid, alivePID(pid), pid2, alivePID(pid2))
		}
	})
	l := startLive(t, llm, cfg, false)
	if got := l.turn("c1", `call {"message":"one"}`, 1, "tool said:"); !strings.Contains(got, "one") {
		t.Fatalf("first answer %q", got)
	}
	pid = everythingPID(t, l)
	if !alivePID(pid) {
		t.Fatalf("server pid %d not alive", pid)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if got := l.turn("c1", `call {"message":"two"}`, 2, "tool said:"); !strings.Contains(got, "unavailable") {
		t.Fatalf("answer while the server is down: %q", got)
	}
	mcpEventually(t, "the restarted server", func() bool { pid2 = everythingPID(t, l); return pid2 != 0 && pid2 != pid })
	if got := l.turn("c1", `call {"message":"three"}`, 3, "tool said:"); !strings.Contains(got, "three") {
		t.Fatalf("answer after the restart: %q\n%+v\n%v", got, l.d.MCPStatus(), l.d.core.Tools.Names())
	}

	url, _ := goSDKServer(t)
	old, _ := os.ReadFile(l.path)
	writeFile(t, l.path, string(old)+"    gosdk:\n      url: "+url+"\n")
	res, err := l.d.Reload(context.Background(), "test")
	if err != nil || !strings.Contains(res.String(), "mcp") {
		t.Fatalf("reload: %v %v", res, err)
	}
	mcpEventually(t, "the added server's tools", func() bool {
		for _, s := range l.d.MCPStatus() {
			if s.Name == "gosdk" && slices.Contains(s.Offered, "gosdk__echo") {
				return true
			}
		}
		return false
	})
	if got := everythingPID(t, l); got != pid2 {
		t.Fatalf("the unchanged server was restarted by the reload: %d → %d", pid2, got)
	}
}

// mcpEventually polls cond until it holds or waitFor passes.
func mcpEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A persona's tools list takes globs too: agent.tools admits every tool of
// the server, the persona narrows them with "gosdk__e*" (before issue 16
// the persona file was rejected as naming an unknown tool).
func TestMCPPersonaToolGlob(t *testing.T) {
	url, _ := goSDKServer(t)
	llm := fakellm.Start(t, fakellm.Text("hi (end)"))
	l := startLive(t, llm, baseConfig+`agent:
  tools: [current_time, "gosdk__*"]
mcp:
  servers:
    gosdk:
      url: `+url+`
`, false)
	writeFile(t, filepath.Join(l.dir, "personas", "mcpbot.md"), "---\ndescription: MCP bot.\ntools: [\"gosdk__e*\"]\n---\nYou use MCP tools.\n")
	old, _ := os.ReadFile(l.path)
	writeFile(t, l.path, strings.Replace(string(old), "default: assistant", "default: mcpbot", 1))
	if _, err := l.d.Reload(context.Background(), "test"); err != nil {
		t.Fatalf("reload: %v", err)
	}
	l.turn("c1", "hello", 1, "hi")
	if names := llm.Requests()[0].ToolNames(); !slices.Equal(names, []string{"gosdk__echo"}) {
		t.Fatalf("tools offered to the persona: %v", names)
	}
}
