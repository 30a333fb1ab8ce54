package tasks_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/agent/tools"
	"github.com/switchboard-bot/switchboard/internal/tasks"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/storetest"
)

// A chat's task works in the chat's workspace: it reads the chat's files
// and what it writes is the chat's (its /files, its send_file, its bounds).
// It used to get a workspace of its own session ("<chat>#task:<id>"): it
// could not see the chat's files, and what it wrote went where no one could
// list, download or delete it, each task with a fresh workspace.max_bytes.
func TestTaskWorksInTheChatsWorkspace(t *testing.T) {
	ctx := context.Background()
	clk := storetest.NewClock()
	s := openStore(t, clk)
	const chat = "telegram:1"
	if err := s.ApplyFiles(ctx, chat, memory.WorkspaceChange{Writes: []memory.FileWrite{
		{Path: "data.csv", Content: []byte("north,42\n")}}}, memory.WorkspaceLimits{}); err != nil {
		t.Fatal(err)
	}
	llm := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
		switch n := len(r.ToolResults()); n {
		case 0:
			return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "read_file", Arguments: `{"path":"data.csv"}`}}}
		case 1:
			return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "write_file",
				Arguments: fmt.Sprintf(`{"path":"report.md","content":"seen: %t"}`, strings.Contains(fakellm.MessageText(r.LastMessage()), "north,42"))}}}
		default:
			return fakellm.Response{Content: "Report written."}
		}
	})
	reg := agent.NewRegistry()
	for _, tl := range tools.NewFiles(tools.FilesOptions{}) {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	a, err := agent.New(agent.Options{BaseURL: llm.URL, APIKey: "k", Model: "m", HTTPClient: llm.HTTPClient(),
		Sessions: s, Workspace: s, Tools: reg, MaxRetries: -1, Now: clk.Now, Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	out := newFakeOut()
	r := newRunner(t, s, a, out, clk, func(o *tasks.Options) { o.ToolNames = reg.Names })
	r.Start(ctx)
	rec, err := r.Spawn(ctx, memory.TaskRecord{Chat: chat, Title: "report", Prompt: "write the report"})
	if err != nil {
		t.Fatal(err)
	}
	if d := wait(t, out.sent, "the task's result"); !strings.Contains(d.text, "Report written.") {
		t.Fatalf("delivered %q", d.text)
	}
	data, _, err := s.ReadFile(ctx, chat, "report.md")
	if err != nil || string(data) != "seen: true" {
		t.Errorf("the chat's report.md = %q, %v; want the task's file, written after reading the chat's data.csv", data, err)
	}
	if own, _ := s.ListFiles(ctx, tasks.SessionKey(rec)); len(own) != 0 {
		t.Errorf("the task's own session has files %v: out of the chat's sight and bounds", own)
	}
}
