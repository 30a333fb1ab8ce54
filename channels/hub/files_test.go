package hub_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/agent/tools"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// dyingStore is a store whose turn commits fail while dead is set, as if
// the process died at that moment: nothing of the turn reaches the disk.
type dyingStore struct {
	*bolt.Store
	dead      *atomic.Bool
	commitRan chan struct{}
}

// die stands for the process dying at the commit: the disk fails (the
// handler retries the commit until it is abandoned), nothing is written.
func (d dyingStore) die() error {
	select {
	case d.commitRan <- struct{}{}:
	default:
	}
	return fmt.Errorf("killed before the commit: %w", syscall.EIO)
}

func (d dyingStore) CommitTurn(ctx context.Context, key string, c memory.TurnCommit) ([]uint64, error) {
	if d.dead.Load() {
		return nil, d.die()
	}
	return d.Store.CommitTurn(ctx, key, c)
}

func (d dyingStore) AppendTurn(ctx context.Context, key string, turn memory.Turn) error {
	if d.dead.Load() {
		return d.die()
	}
	return d.Store.AppendTurn(ctx, key, turn)
}

// startFiles is crashRig.start with the file tools and a workspace; the
// store dies at the turn's commit while dead is set.
func startFiles(c *crashRig, limits memory.WorkspaceLimits, dead *atomic.Bool, commitRan chan struct{}) {
	c.t.Helper()
	st, err := bolt.Open(filepath.Join(c.dir, "switchboard.db"), memory.Options{NoSync: true})
	if err != nil {
		c.t.Fatalf("open store: %v", err)
	}
	ds := dyingStore{Store: st, dead: dead, commitRan: commitRan}
	reg := agent.NewRegistry()
	for _, tl := range tools.NewFiles(tools.FilesOptions{}) {
		if err := reg.Register(tl); err != nil {
			c.t.Fatal(err)
		}
	}
	ag, err := agent.New(agent.Options{
		BaseURL: c.llm.URL, APIKey: "test-key", Model: "fake-model",
		MaxRetries: 1, RetryBase: time.Millisecond, RetryMax: 2 * time.Millisecond,
		Timeout: 10 * time.Second, HTTPClient: c.llm.HTTPClient(), Sessions: ds, Tools: reg,
		Workspace: st, WorkspaceLimits: func() memory.WorkspaceLimits { return limits },
	})
	if err != nil {
		c.t.Fatalf("agent: %v", err)
	}
	c.store = st
	c.h = hub.NewHandler(hub.HandlerOptions{
		Store: ds, Agent: ag, Access: openAccess(),
		Outbound:        outbound.New(st, outbound.Options{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}),
		WorkspaceLimits: func() memory.WorkspaceLimits { return limits },
	})
	c.h.Register(c.ch)
	c.ch.Attach(c.h)
}

// TestTurnFilesCommitWithTheTurnAcrossACrash: a turn that wrote a file and
// was killed before its commit leaves no file; the replay after the restart
// writes it again and commits it with the turn; /files lists it, and it is
// still there after another restart.
func TestTurnFilesCommitWithTheTurnAcrossACrash(t *testing.T) {
	var dead atomic.Bool
	dead.Store(true)
	commitRan := make(chan struct{}, 1)
	llm := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
		if !r.HasTools() {
			return fakellm.Response{Content: "ok"}
		}
		if len(r.ToolResults()) == 0 {
			return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: tools.NameWriteFile,
				Arguments: `{"path":"notes/plan.md","content":"step one\n"}`}}}
		}
		return fakellm.Response{Content: "Saved your plan."}
	})
	c := &crashRig{t: t, dir: t.TempDir(), llm: llm, ch: console.NewMemory("memory", 4000, 5*time.Millisecond)}
	startFiles(c, memory.WorkspaceLimits{}, &dead, commitRan)
	t.Cleanup(c.crash)
	const target = "memory:dm-ann"
	n := 0
	say := func(text string) {
		t.Helper()
		n++
		if err := c.ch.Say(context.Background(), channels.Message{ChatID: "dm-ann", MessageID: fmt.Sprint(n),
			Sender: channels.Sender{ID: "ann", Name: "Ann"}, Text: text, Direct: true}); err != nil {
			t.Fatal(err)
		}
	}
	waitText := func(what string) {
		t.Helper()
		c.ch.WaitFor(t, target, wait, what, func(s []console.Sent) bool {
			for _, m := range s {
				if strings.Contains(m.Text, what) {
					return true
				}
			}
			return false
		})
	}
	say("save my plan")
	select { // the turn ran write_file and reached its commit, which dies
	case <-commitRan:
	case <-time.After(wait):
		t.Fatal("the turn never reached its commit")
	}
	c.crash()

	st, err := bolt.Open(filepath.Join(c.dir, "switchboard.db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if files, err := st.ListFiles(context.Background(), target); err != nil || len(files) != 0 {
		t.Fatalf("after a crash before the commit the store has files %+v (%v)", files, err)
	}
	_ = st.Close()

	dead.Store(false)
	startFiles(c, memory.WorkspaceLimits{}, &dead, commitRan)
	if _, err := c.h.Replay(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitText("Saved your plan.")
	say("/files")
	waitText("notes/plan.md — 9 bytes\n1 of 1000 files, 9 bytes of 50 MiB (one file at most 10 MiB)")

	c.quiesce()
	startFiles(c, memory.WorkspaceLimits{MaxFiles: 5}, &dead, commitRan)
	say("/files")
	waitText("Files in this chat:\nnotes/plan.md — 9 bytes\n1 of 5 files")
	data, _, err := c.store.ReadFile(context.Background(), target, "notes/plan.md")
	if err != nil || string(data) != "step one\n" {
		t.Fatalf("stored file = %q, %v", data, err)
	}
}

func TestFilesCommandEmpty(t *testing.T) {
	llm := fakellm.Start(t, func(*fakellm.Request) fakellm.Response { return fakellm.Response{Content: "ok"} })
	c := &crashRig{t: t, dir: t.TempDir(), llm: llm, ch: console.NewMemory("memory", 4000, 5*time.Millisecond)}
	startFiles(c, memory.WorkspaceLimits{}, new(atomic.Bool), nil)
	t.Cleanup(c.crash)
	if err := c.ch.Say(context.Background(), channels.Message{ChatID: "dm-bob", MessageID: "1",
		Sender: channels.Sender{ID: "bob", Name: "Bob"}, Text: "/files", Direct: true}); err != nil {
		t.Fatal(err)
	}
	got := c.ch.WaitSent(t, "memory:dm-bob", 1, wait)
	if want := "No files in this chat yet. (0 of 1000 files, 0 bytes of 50 MiB (one file at most 10 MiB))"; got[0].Text != want {
		t.Fatalf("/files = %q, want %q", got[0].Text, want)
	}
	if err := c.ch.Say(context.Background(), channels.Message{ChatID: "dm-bob", MessageID: "2",
		Sender: channels.Sender{ID: "bob", Name: "Bob"}, Text: "/help", Direct: true}); err != nil {
		t.Fatal(err)
	}
	got = c.ch.WaitSent(t, "memory:dm-bob", 2, wait)
	if !strings.Contains(got[1].Text, "/files — this chat's workspace files") {
		t.Fatalf("/help does not list /files: %q", got[1].Text)
	}
}
