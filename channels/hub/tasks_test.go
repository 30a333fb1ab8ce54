package hub_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/agent/tools"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/internal/tasks"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// taskRig is a handler with background tasks: the real agent with the spawn
// tool, a tasks.Runner over the same store delivering through an
// outbound.Router to the in-memory channel.
type taskRig struct {
	store  *bolt.Store
	h      *hub.Handler
	ch     *console.Memory
	runner *tasks.Runner
}

func newTaskRig(t *testing.T, llm *fakellm.Server) *taskRig {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "switchboard.db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	reg := agent.NewRegistry()
	ag, err := agent.New(agent.Options{
		BaseURL: llm.URL, APIKey: "test-key", Model: "fake-model", MaxRetries: -1,
		Timeout: 5 * time.Second, HTTPClient: llm.HTTPClient(), Sessions: st, Tools: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	ch := console.NewMemory("memory", 4000, 5*time.Millisecond)
	out := outbound.New(st, outbound.Options{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond})
	r := &taskRig{store: st, ch: ch}
	r.h = hub.NewHandler(hub.HandlerOptions{Store: st, Agent: ag, Access: openAccess(), Outbound: out, Tasks: taskControl{r}})
	r.runner = tasks.New(tasks.Options{Store: st, Agent: ag, Deliver: outbound.Router{Out: out, Channels: r.h.Channel},
		ToolNames: reg.Names, Log: slog.New(slog.DiscardHandler)})
	if err := reg.Register(tools.NewSpawn(r.runner)); err != nil {
		t.Fatal(err)
	}
	r.h.Register(ch)
	ch.Attach(r.h)
	r.runner.Start(context.Background())
	t.Cleanup(func() {
		r.runner.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		r.h.Close(ctx)
		_ = st.Close()
	})
	return r
}

// taskControl defers to the rig's runner (built after the handler, as in
// the daemon).
type taskControl struct{ r *taskRig }

func (c taskControl) List(ctx context.Context, chat string, limit int) ([]memory.TaskRecord, error) {
	return c.r.runner.List(ctx, chat, limit)
}

func (c taskControl) StopTask(ctx context.Context, id, chat string) (memory.TaskRecord, error) {
	return c.r.runner.StopTask(ctx, id, chat)
}

func sentTexts(s []console.Sent) []string {
	var out []string
	for _, m := range s {
		out = append(out, m.Text)
	}
	return out
}

func hasText(want string) func([]console.Sent) bool {
	return func(s []console.Sent) bool {
		return slices.ContainsFunc(s, func(m console.Sent) bool { return strings.Contains(m.Text, want) })
	}
}

// The model spawns a task from a chat turn; the turn answers at once, and
// the task's result arrives later as its own reply naming the task.
func TestSpawnedTaskResultArrivesInTheChat(t *testing.T) {
	llm := fakellm.Start(t, func(req *fakellm.Request) fakellm.Response {
		switch {
		case req.LastUserText() == "look up the tides" && len(req.ToolResults()) == 0:
			return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "spawn",
				Arguments: `{"title":"tides","prompt":"Find today's tides in Kiel."}`}}}
		case req.LastUserText() == "look up the tides":
			return fakellm.Response{Content: "I started a task for that."}
		case req.LastUserText() == "Find today's tides in Kiel.":
			if slices.Contains(req.ToolNames(), "spawn") {
				return fakellm.Response{Content: "spawn was offered to a task"}
			}
			return fakellm.Response{Content: "High tide at 14:02."}
		}
		return fakellm.Response{Content: "?"}
	})
	r := newTaskRig(t, llm)
	if err := r.ch.Say(context.Background(), chatMsg("c1", "look up the tides")); err != nil {
		t.Fatal(err)
	}
	got := r.ch.WaitFor(t, "memory:c1", wait, "the task's result", hasText("Task t1 (tides) finished"))
	texts := sentTexts(got)
	if len(texts) != 2 || texts[0] != "I started a task for that." || texts[1] != "Task t1 (tides) finished:\n\nHigh tide at 14:02." {
		t.Fatalf("sent %q", texts)
	}
}

// /tasks lists this chat's tasks; /stop <id> stops one of them (never
// another chat's) and leaves the turn in progress alone; plain /stop still
// stops the turn.
func TestTasksAndStopTaskCommands(t *testing.T) {
	g := newGate(func(*fakellm.Request) fakellm.Response { return fakellm.Response{Content: "the long answer"} })
	llm := fakellm.Start(t, func(req *fakellm.Request) fakellm.Response {
		if req.LastUserText() == "slow research" {
			return fakellm.Response{Content: "never", Delay: time.Hour} // the task: runs until stopped
		}
		return g.responder(req)
	})
	r := newTaskRig(t, llm)
	ctx := context.Background()
	say := func(text string) {
		t.Helper()
		if err := r.ch.Say(ctx, chatMsg("c1", text)); err != nil {
			t.Fatal(err)
		}
	}

	say("/tasks")
	r.ch.WaitFor(t, "memory:c1", wait, "the empty list", hasText("No background tasks in this chat."))
	rec, err := r.runner.Spawn(ctx, memory.TaskRecord{Chat: "memory:c1", Title: "deep dive", Prompt: "slow research"})
	if err != nil {
		t.Fatal(err)
	}
	say("/tasks")
	r.ch.WaitFor(t, "memory:c1", wait, "the list", hasText(rec.ID+" — deep dive — "))

	// A chat turn is running when /stop t1 arrives: the turn goes on.
	say("a question")
	g.waitArrived(t)
	say("/stop " + rec.ID)
	g.release <- struct{}{}
	got := r.ch.WaitFor(t, "memory:c1", wait, "the stop reply", hasText("Task "+rec.ID+" stopped."))
	if !slices.Contains(sentTexts(got), "the long answer") {
		t.Fatalf("the turn in progress was stopped by /stop <id>: %q", sentTexts(got))
	}
	if tr, err := r.store.GetTask(ctx, rec.ID); err != nil || tr.State != memory.TaskCanceled {
		t.Fatalf("task %+v %v", tr, err)
	}
	say("/stop " + rec.ID)
	r.ch.WaitFor(t, "memory:c1", wait, "already ended", hasText("Task "+rec.ID+" already ended (canceled)."))
	if err := r.ch.Say(ctx, chatMsg("c2", "/stop "+rec.ID)); err != nil {
		t.Fatal(err)
	}
	r.ch.WaitFor(t, "memory:c2", wait, "not this chat's", hasText("This chat has no task "+rec.ID+"."))
	if got := sentTexts(r.ch.Sent("memory:c1")); slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "finished") }) {
		t.Fatalf("a stopped task delivered: %q", got)
	}

	// Plain /stop keeps its meaning.
	say("another question")
	g.waitArrived(t)
	say("/stop")
	r.ch.WaitFor(t, "memory:c1", wait, "Stopped.", hasText("Stopped."))
	g.release <- struct{}{}
}

func chatMsg(chat, text string) channels.Message {
	return channels.Message{ChatID: chat, Sender: channels.Sender{ID: "ann", Name: "Ann"}, Text: text, Direct: true}
}
