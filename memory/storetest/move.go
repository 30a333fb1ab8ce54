package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

func (h harness) testMoveSessionKeepsHistoryNotesAndArchives(t *testing.T) {
	ctx := context.Background()
	st, err := h.open(t, t.TempDir(), memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	from, to := "telegram:-100", "telegram:-1001234"
	turn := func(text string) memory.Turn {
		return memory.Turn{ID: text, Messages: []memory.Message{{Role: memory.RoleUser, Content: text, Time: time.Now()},
			{Role: memory.RoleAssistant, Content: "re " + text, Time: time.Now()}}}
	}
	if err := st.AppendTurn(ctx, from, turn("old")); err != nil {
		t.Fatal(err)
	}
	if err := st.ResetSession(ctx, from); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendTurn(ctx, from, turn("before")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddNote(ctx, from, "likes tea"); err != nil {
		t.Fatal(err)
	}
	if err := st.MoveSession(ctx, from, to); err != nil {
		t.Fatalf("move: %v", err)
	}
	if err := st.AppendTurn(ctx, to, turn("after")); err != nil {
		t.Fatal(err)
	}
	hist, err := st.LoadHistory(ctx, to, 0)
	if err != nil || len(hist) != 4 || hist[0].Content != "before" || hist[2].Content != "after" {
		t.Fatalf("history under the new key = %+v, %v", hist, err)
	}
	if meta, ok, _ := st.Session(ctx, to); !ok || meta.Key != to || len(meta.Archived) != 1 {
		t.Fatalf("meta = %+v %v", meta, ok)
	}
	if _, ok, _ := st.Session(ctx, from); ok {
		t.Fatal("the old key still has a session")
	}
	if notes, _ := st.ListNotes(ctx, to); len(notes) != 1 {
		t.Fatalf("notes not moved: %+v", notes)
	}
	if arch, _ := st.ArchivedSessions(ctx, to); len(arch) != 1 {
		t.Fatalf("archives not moved: %+v", arch)
	}
	if err := st.AppendTurn(ctx, from, turn("x")); err != nil {
		t.Fatal(err)
	}
	if err := st.MoveSession(ctx, from, to); err == nil {
		t.Fatal("moving onto an existing session must fail")
	}
}
