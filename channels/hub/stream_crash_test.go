package hub_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// crashRig is a handler over a store on disk and one in-memory chat that
// outlives the handler: crash abandons the handler mid-turn (its turns are
// canceled and the inbox keeps the message, as after a SIGKILL) and start
// builds a new one over the same store, so what the chat shows across the
// crash can be checked.
type crashRig struct {
	t         *testing.T
	dir       string
	llm       *fakellm.Server
	ch        *console.Memory
	store     *bolt.Store
	h         *hub.Handler
	maxChunks int
}

func newCrashRig(t *testing.T, llm *fakellm.Server, limit, maxChunks int) *crashRig {
	t.Helper()
	c := &crashRig{t: t, dir: t.TempDir(), llm: llm, ch: console.NewMemory("memory", limit, 5*time.Millisecond),
		maxChunks: maxChunks}
	c.start()
	t.Cleanup(func() { c.crash() })
	return c
}

func (c *crashRig) start() {
	c.t.Helper()
	st, err := bolt.Open(filepath.Join(c.dir, "switchboard.db"), memory.Options{NoSync: true})
	if err != nil {
		c.t.Fatalf("open store: %v", err)
	}
	ag, err := agent.New(agent.Options{
		BaseURL: c.llm.URL, APIKey: "test-key", Model: "fake-model",
		MaxRetries: 1, RetryBase: time.Millisecond, RetryMax: 2 * time.Millisecond,
		Timeout: 10 * time.Second, HTTPClient: c.llm.HTTPClient(), Sessions: st,
	})
	if err != nil {
		c.t.Fatalf("agent: %v", err)
	}
	c.store = st
	c.h = hub.NewHandler(hub.HandlerOptions{
		Store: st, Agent: ag, Access: openAccess(),
		Outbound: outbound.New(st, outbound.Options{BaseDelay: time.Millisecond,
			MaxDelay: 5 * time.Millisecond, MaxChunks: c.maxChunks}),
	})
	c.h.Register(c.ch)
	c.ch.Attach(c.h)
}

// crash stops the handler without letting its turns finish; idempotent.
func (c *crashRig) crash() {
	if c.h == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.h.Close(ctx)
	if err := c.store.Close(); err != nil {
		c.t.Errorf("close store: %v", err)
	}
	c.h = nil
}

// quiesce lets the running turns finish and stops the handler.
func (c *crashRig) quiesce() {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c.h.Close(ctx)
	if err := c.store.Close(); err != nil {
		c.t.Errorf("close store: %v", err)
	}
	c.h = nil
}

func words(prefix string, n int) string {
	var b strings.Builder
	b.WriteString(prefix)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, " word%d", i)
	}
	return b.String()
}

// TestRerunAfterCrashEditsTheDraft: a turn killed while its answer streamed
// left a draft in the chat; the run after the restart must continue that
// draft (edit it, and turn drafts the new answer does not need into the
// SupersededDraft marker) so the chat ends with the answer exactly once and
// no fragment.
func TestRerunAfterCrashEditsTheDraft(t *testing.T) {
	long := words("ANSWER", 1500)
	cases := []struct {
		name      string
		limit     int    // the chat's chunk size
		rerun     string // what the model answers after the restart
		wantTexts []string
	}{
		{"same answer, one chunk", 4000, long, []string{long}},
		{"shorter answer than the drafts", 300, "SHORT answer after the restart, it fits in one message.",
			[]string{"SHORT answer after the restart, it fits in one message.", outbound.SupersededDraft}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			llm := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
				if calls.Add(1) == 1 {
					// The first run streams ~500 characters, then hangs
					// until the crash.
					return fakellm.Response{Content: long, ChunkSize: 20, StallAfter: 25}
				}
				return fakellm.Response{Content: tc.rerun, ChunkSize: 40}
			})
			c := newCrashRig(t, llm, tc.limit, 0)
			const target = "memory:dm-ann"
			if err := c.ch.Say(context.Background(), channels.Message{ChatID: "dm-ann",
				Sender: channels.Sender{ID: "ann", Name: "Ann"}, Text: "tell me a lot", Direct: true}); err != nil {
				t.Fatal(err)
			}
			drafts := c.ch.WaitFor(t, target, wait, "a streamed draft of ~500 characters", func(s []console.Sent) bool {
				n := 0
				for _, m := range s {
					n += len(m.Text)
				}
				return n >= 450
			})
			c.crash()
			c.start()
			if _, err := c.h.Replay(context.Background()); err != nil {
				t.Fatalf("replay: %v", err)
			}
			c.ch.WaitFor(t, target, wait, "the answer", func(s []console.Sent) bool {
				for _, m := range s {
					if m.Text == tc.wantTexts[0] {
						return true
					}
				}
				return false
			})
			c.quiesce()

			got := c.ch.Sent(target)
			var texts []string
			for _, m := range got {
				texts = append(texts, m.Text)
			}
			if strings.Join(texts, "\n---\n") != strings.Join(tc.wantTexts, "\n---\n") {
				t.Fatalf("the chat shows %d messages %q, want %q", len(texts), short(texts), short(tc.wantTexts))
			}
			for i, m := range got {
				if i < len(drafts) && m.ID != drafts[i].ID {
					t.Errorf("message %d is %s, want the crashed run's draft %s edited", i, m.ID, drafts[i].ID)
				}
				if m.Edits == 0 {
					t.Errorf("message %d (%s) was never edited: the draft was not continued", i, m.ID)
				}
			}
		})
	}
}

func short(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		if len(s) > 60 {
			s = s[:30] + "…" + s[len(s)-20:] + fmt.Sprintf(" (%d chars)", len(s))
		}
		out[i] = s
	}
	return out
}

// TestHugeAnswerIsCapped: a 2 MB model answer, streamed, reaches the chat as
// at most max_answer_chunks messages, the last one ending with the
// truncation note.
func TestHugeAnswerIsCapped(t *testing.T) {
	huge := words("HUGE", 2<<20)
	llm := fakellm.Start(t, func(*fakellm.Request) fakellm.Response {
		return fakellm.Response{Content: huge, ChunkSize: 64 << 10}
	})
	const maxChunks = 3
	c := newCrashRig(t, llm, 4000, maxChunks)
	const target = "memory:dm-bob"
	if err := c.ch.Say(context.Background(), channels.Message{ChatID: "dm-bob",
		Sender: channels.Sender{ID: "bob", Name: "Bob"}, Text: "everything please", Direct: true}); err != nil {
		t.Fatal(err)
	}
	c.ch.WaitFor(t, target, wait, "the truncated answer", func(s []console.Sent) bool {
		return len(s) > maxChunks || len(s) > 0 && strings.HasSuffix(s[len(s)-1].Text, outbound.TruncatedNote)
	})
	c.quiesce()
	got := c.ch.Sent(target)
	if len(got) > maxChunks {
		t.Fatalf("a 2 MB answer took %d messages, want at most %d", len(got), maxChunks)
	}
	if last := got[len(got)-1].Text; !strings.HasSuffix(last, "\n\n"+outbound.TruncatedNote) {
		t.Errorf("the last message does not end with the truncation note: %q", short([]string{last}))
	}
	if !strings.HasPrefix(got[0].Text, "HUGE word0 word1") {
		t.Errorf("the answer does not start the first message: %q", short([]string{got[0].Text}))
	}
	for i, m := range got[:len(got)-1] {
		if strings.Contains(m.Text, outbound.TruncatedNote) {
			t.Errorf("message %d carries the truncation note; only the last may", i)
		}
	}
}
