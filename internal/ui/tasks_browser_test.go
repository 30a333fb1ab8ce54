package ui_test

import (
	"context"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
)

// Issue 31: the Tasks page, in a browser, after a real background task ran
// for the console's chat: its id, title, chat, state and result excerpt,
// every text shown as the text it is (no markup from a hostile title or
// result), the counts, and the result delivered to the chat naming the task.
func TestBrowserTasksPage(t *testing.T) {
	const hostile = `<img src=x onerror=alert(1)>`
	r := startRig(t, rigOptions{LLM: func(req *fakellm.Request) fakellm.Response {
		if req.LastUserText() == "TASK: summarize" {
			return fakellm.Response{Content: "Summary " + hostile + " done."}
		}
		if req.LastUserText() == "TASK: digest the week" {
			return fakellm.Response{Content: "3 issues closed, 1 opened; the release is on track."}
		}
		return fakellm.Response{Content: "echo: " + req.LastUserText()}
	}})
	p := r.browse()
	conv := openChat(p, r.base)
	say(p, "hello")
	p.WaitText("#chat-history .msg.assistant", "echo: hello")

	runner := r.d.Tasks()
	if runner == nil {
		t.Fatal("the daemon has no task runner")
	}
	chat := "web:" + conv
	// The screenshot first, of a task with plain text; the hostile one
	// comes after.
	week, err := runner.Spawn(context.Background(), memory.TaskRecord{Chat: chat, Title: "weekly digest", Prompt: "TASK: digest the week"})
	if err != nil {
		t.Fatal(err)
	}
	p.WaitText("#chat-history", "Task "+week.ID+" (weekly digest) finished:")
	p.Navigate(r.base + "/ui/tasks")
	p.WaitText("#tasks", "the release is on track")
	r.screenshot(p, "tasks")
	openConv(p, r.base, conv)

	rec, err := runner.Spawn(context.Background(), memory.TaskRecord{Chat: chat, Title: "digest " + hostile, Prompt: "TASK: summarize"})
	if err != nil {
		t.Fatal(err)
	}
	// The chat renders Markdown, where raw HTML is dropped: the name and the
	// result arrive, the hostile markup does not.
	p.WaitText("#chat-history", "Task "+rec.ID+" (digest ) finished:")

	p.Navigate(r.base + "/ui/tasks")
	p.WaitVisible("#tasks")
	rows := tableRows(p, "#tasks")
	for _, want := range []string{rec.ID + " digest " + hostile, chat, "|done|", "Summary " + hostile + " done."} {
		if !strings.Contains(rows, want) {
			t.Errorf("the tasks table lacks %q:\n%s", want, rows)
		}
	}
	if c := p.Text("#tasks-counts"); !strings.Contains(c, "0 running, 0 queued") {
		t.Errorf("counts %q", c)
	}
	if n := p.Count(`main img, [onerror]`); n != 0 {
		t.Errorf("%d element(s) from the hostile text: the text became markup", n)
	}
}
