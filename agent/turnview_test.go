package agent

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
)

// countingStore counts a turn's reads of a real store.
type countingStore struct {
	memory.Store
	views, history, sessions, notes atomic.Int32
}

func (c *countingStore) ReadTurn(ctx context.Context, key string, limit int) (memory.TurnView, error) {
	c.views.Add(1)
	return c.Store.(memory.TurnReader).ReadTurn(ctx, key, limit)
}

func (c *countingStore) LoadHistory(ctx context.Context, key string, limit int) ([]memory.Message, error) {
	c.history.Add(1)
	return c.Store.LoadHistory(ctx, key, limit)
}

func (c *countingStore) Session(ctx context.Context, key string) (memory.SessionMeta, bool, error) {
	c.sessions.Add(1)
	return c.Store.Session(ctx, key)
}

func (c *countingStore) ListNotes(ctx context.Context, scope string) ([]memory.Note, error) {
	c.notes.Add(1)
	return c.Store.ListNotes(ctx, scope)
}

// A turn reads its history, counters and notes in one transaction, and what
// the model gets is the same as from separate reads: the notes message, the
// history, the compaction.
func TestTurnReadsOnce(t *testing.T) {
	tests := []struct {
		name      string
		turns     int  // prefilled turns
		compacts  bool // the window is exceeded: the compactor writes a summary note
		wantReads int32
	}{
		{"short session", 3, false, 0},
		// Compaction changes the notes: the notes message reads them again.
		{"compacting session", 90, true, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &countingStore{Store: openTestStore(t, func() time.Time { return testNow })}
			const key = "slack:T1:C1"
			prefill(t, st.Store, key, tc.turns, "")
			if _, err := st.AddNote(context.Background(), key, "Ann likes numbered lists."); err != nil {
				t.Fatal(err)
			}
			var summaries atomic.Int32
			srv, a := newCompactHarness(t, compactResponder(false, &summaries), st, st, nil)
			res, err := a.ProcessMessage(context.Background(), Request{SessionKey: key, Text: "question 100"})
			if err != nil || res.Text != "answer to question 100" {
				t.Fatalf("turn: %q %v", res.Text, err)
			}
			if v, h, s, n := st.views.Load(), st.history.Load(), st.sessions.Load(), st.notes.Load(); v != 1 || h != 0 || s != 0 || n != tc.wantReads {
				t.Fatalf("reads: %d views, %d histories, %d sessions, %d notes; want 1 view and %d notes", v, h, s, n, tc.wantReads)
			}
			reqs := srv.Requests()
			last := reqs[len(reqs)-1]
			notesMsg := last.Body.Messages[1].Content
			if !strings.Contains(notesMsg, "Ann likes numbered lists.") {
				t.Fatalf("notes message: %q", notesMsg)
			}
			if tc.compacts != strings.Contains(notesMsg, "SUMMARY-1") {
				t.Fatalf("summary in the notes message = %v, want %v: %q", !tc.compacts, tc.compacts, notesMsg)
			}
			h := history(last)
			checkWellFormed(t, h)
			if !tc.compacts && (len(h) != 6 || h[0].Content != "question 1") {
				t.Fatalf("history: %d messages, first %q", len(h), h[0].Content)
			}
		})
	}
}

// A store whose notes live elsewhere is read the old way.
func TestTurnReadsSeparatelyWhenNotesAreElsewhere(t *testing.T) {
	st := &countingStore{Store: openTestStore(t, func() time.Time { return testNow })}
	notes := openTestStore(t, func() time.Time { return testNow })
	const key = "slack:T1:C2"
	if _, err := notes.AddNote(context.Background(), key, "kept in the other store"); err != nil {
		t.Fatal(err)
	}
	srv, a := newCompactHarness(t, fakellm.Echo(), st, notes, nil)
	if _, err := a.ProcessMessage(context.Background(), Request{SessionKey: key, Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if st.views.Load() != 0 || st.history.Load() != 1 {
		t.Fatalf("views %d, histories %d", st.views.Load(), st.history.Load())
	}
	if m := srv.Requests()[0].Body.Messages[1].Content; !strings.Contains(m, "kept in the other store") {
		t.Fatalf("notes message: %q", m)
	}
}

// A persona resolved through Request.ResolvePersona gets the session's
// metadata from the turn's single read: no read of its own, and the turn
// answers as the persona the session chose.
func TestResolvePersonaUsesTheTurnsRead(t *testing.T) {
	st := &countingStore{Store: openTestStore(t, func() time.Time { return testNow })}
	const key = "slack:T1:C3"
	prefill(t, st.Store, key, 2, "")
	if err := st.SetSessionPersona(context.Background(), key, "pirate"); err != nil {
		t.Fatal(err)
	}
	srv, a := newCompactHarness(t, fakellm.Echo(), st, st, func(o *Options) {
		o.Personas = personaList{{Name: "assistant", Identity: "Plain helper."}, {Name: "pirate", Identity: "Arr, a pirate."}}
	})
	var got []string
	res, err := a.ProcessMessage(context.Background(), Request{SessionKey: key, Text: "ahoy",
		ResolvePersona: func(_ context.Context, own *memory.SessionMeta) string {
			if own == nil {
				got = append(got, "<nil>")
				return ""
			}
			got = append(got, own.Persona)
			return own.Persona
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "pirate" {
		t.Fatalf("the resolver saw %q, want the session's own choice once", got)
	}
	if v, h, s := st.views.Load(), st.history.Load(), st.sessions.Load(); v != 1 || h != 0 || s != 0 {
		t.Fatalf("reads: %d views, %d histories, %d sessions; want the one view", v, h, s)
	}
	reqs := srv.Requests()
	if sys := reqs[len(reqs)-1].SystemPrompt(); !strings.Contains(sys, "Arr, a pirate.") {
		t.Fatalf("system prompt is not the pirate's: %q", sys)
	}
	if res.Text == "" {
		t.Fatal("no answer")
	}
}
