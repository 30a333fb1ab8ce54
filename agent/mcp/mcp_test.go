package mcp

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-bot/switchboard/agent"
)

// An in-process go-sdk server: its tools are registered as <server>__<tool>
// with description, schema and annotations; results render as the model
// sees them; a bad argument is refused before the server is called.
func TestInProcessServerTools(t *testing.T) {
	srv, calls := NewTestServer()
	reg := agent.NewRegistry()
	m := newManager(t, reg)
	m.Apply(map[string]ServerConfig{"gosdk": {Transport: inProcess(t, srv)}})
	waitReady(t, m)

	want := []string{"gosdk__add_numbers", "gosdk__echo", "gosdk__fail", "gosdk__image"}
	if got := strings.Join(reg.Names(), ","); got != strings.Join(want, ",") {
		t.Fatalf("registered %s, want %v", got, want)
	}
	echo, _ := reg.Get("gosdk__echo")
	if echo.Description() != "Echo the text back." || !strings.Contains(string(echo.Schema()), `"text"`) {
		t.Fatalf("echo: %q %s", echo.Description(), echo.Schema())
	}
	if a := agent.AnnotationsOf(echo); !a.ReadOnly || a.Destructive {
		t.Fatalf("echo annotations %+v", a)
	}
	fail, _ := reg.Get("gosdk__fail")
	if a := agent.AnnotationsOf(fail); a.ReadOnly || a.Destructive {
		t.Fatalf("fail annotations %+v", a)
	}
	img, _ := reg.Get("gosdk__image")
	if a := agent.AnnotationsOf(img); !a.Destructive {
		t.Fatalf("no hint must default to destructive: %+v", a)
	}

	tests := []struct {
		tool, args, want, wantErr string
	}{
		{"gosdk__echo", `{"text":"hi"}`, "echo: hi", ""},
		{"gosdk__echo", `{"text":5}`, "", "arguments do not match the schema"},
		{"gosdk__echo", `{}`, "", "arguments do not match the schema"},
		{"gosdk__fail", `{}`, "", "the disk is full"},
		{"gosdk__image", `{}`, "here:\n[image: image/png, 8 bytes]", ""},
		{"gosdk__add_numbers", `{"A":2,"B":3}`, "done\n{\"sum\":5}", ""},
	}
	for _, tc := range tests {
		got, err := call(t, reg, tc.tool, tc.args)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s %s: err %v, want %q", tc.tool, tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s %s = %q, %v; want %q", tc.tool, tc.args, got, err, tc.want)
		}
	}
	if n := calls.Echo.Load(); n != 1 {
		t.Fatalf("the server got %d echo calls, want 1 (bad arguments must not reach it)", n)
	}
	if _, err := call(t, reg, "gosdk__fail", `{}`); !isPermanent(err) {
		t.Fatalf("isError must be a permanent tool error: %v", err)
	}
}

func isPermanent(err error) bool {
	var pe *agent.PermanentError
	return errors.As(err, &pe)
}

// The server's tools allowlist and agent.tools (Admit) both filter, and
// notifications/tools/list_changed brings in a tool added later.
func TestAllowlistsAndListChanged(t *testing.T) {
	srv, _ := NewTestServer()
	reg := agent.NewRegistry()
	m := New(Options{Registry: reg, Admit: func(n string) bool { return agent.AllowedBy([]string{"s__*"}, n) }})
	t.Cleanup(m.Close)
	m.Apply(map[string]ServerConfig{"s": {Transport: inProcess(t, srv), Tools: []string{"e*", "late"}}})
	waitReady(t, m)
	if got := strings.Join(reg.Names(), ","); got != "s__echo" {
		t.Fatalf("registered %s", got)
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "late", Description: "Added later."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "late"}}}, nil, nil
		})
	waitUntil(t, "the list_changed refresh", func() bool { _, ok := reg.Get("s__late"); return ok })
	if got, err := call(t, reg, "s__late", `{}`); err != nil || got != "late" {
		t.Fatalf("late = %q, %v", got, err)
	}
	// A reload that narrows agent.tools takes the tools away; Status still lists them.
	m.Attach(reg, func(n string) bool { return n == "s__late" })
	if got := strings.Join(reg.Names(), ","); got != "s__late" {
		t.Fatalf("after Attach registered %s", got)
	}
	st := m.Status()
	if len(st) != 1 || strings.Join(st[0].Tools, ",") != "s__echo,s__late" || strings.Join(st[0].Offered, ",") != "s__late" {
		t.Fatalf("status %+v", st)
	}
}

func TestToolName(t *testing.T) {
	for _, tc := range []struct {
		server, remote, want string
		ok                   bool
	}{
		{"gh", "create_issue", "gh__create_issue", true},
		{"gh", "get.file contents", "gh__get_file_contents", true},
		{"gh", "", "gh__", false},
		{"gh", strings.Repeat("x", 61), "gh__" + strings.Repeat("x", 61), false},
	} {
		got, ok := toolName(tc.server, tc.remote)
		if got != tc.want || ok != tc.ok {
			t.Errorf("toolName(%q, %q) = %q, %v", tc.server, tc.remote, got, ok)
		}
	}
}

// A stdio server's stderr is logged line by line, bounded, with its
// configured secret values scrubbed.
func TestStderrLoggerScrubsSecrets(t *testing.T) {
	var buf strings.Builder
	l := &lineLogger{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
		secrets: secretsOf(ServerConfig{Env: map[string]string{"TOKEN": "tok-very-secret"}})}
	_, _ = l.Write([]byte("starting with tok-very-secret\n" + strings.Repeat("x", 5000)))
	out := buf.String()
	if strings.Contains(out, "tok-very-secret") || !strings.Contains(out, "starting with [redacted]") {
		t.Fatalf("log:\n%s", out)
	}
	if strings.Count(out, "x") > maxStderrLine+10 {
		t.Fatal("a long line was not bounded")
	}
}
