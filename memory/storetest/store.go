package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/memory"
)

func (h harness) testReopenKeepsEverything(t *testing.T) {
	ctx := context.Background()
	s, clk, path := h.openTest(t)

	turn := memory.Turn{ID: "t1", Messages: []memory.Message{
		{Role: memory.RoleUser, Content: "hello", Name: "ann", Time: clk.Now()},
		{Role: memory.RoleAssistant, Content: "hi ann", Time: clk.Now()},
	}, Usage: memory.Usage{PromptTokens: 10, CompletionTokens: 3, TotalTokens: 13}, FinishReason: "final", Answer: "hi ann"}
	mustNo(t, s.AppendTurn(ctx, "telegram:1", turn))
	mustNo(t, s.SetSessionPersona(ctx, "telegram:1", "buddy"))
	note, err := s.AddNote(ctx, "telegram:user:42", "likes tea")
	mustNo(t, err)
	inID, dup, err := s.Accept(ctx, memory.InboxItem{Channel: "telegram", MessageID: "m1", SessionKey: "telegram:1", Payload: []byte(`{"text":"hello"}`)})
	mustNo(t, err)
	if dup {
		t.Fatal("first Accept reported duplicate")
	}
	obID, err := s.OutboxIntent(ctx, memory.OutboxRecord{Target: "telegram:1", TurnID: "t1", Chunk: 0, Text: "hi ann"})
	mustNo(t, err)
	mustNo(t, s.OutboxResult(ctx, obID, memory.OutboxDelivered, "555", ""))
	mustNo(t, s.PutJob(ctx, memory.JobRecord{Name: "daily", Spec: []byte(`{"schedule":"0 9 * * *"}`)}))
	runID, err := s.AddRun(ctx, memory.JobRun{Job: "daily", Status: "ok", Deliveries: []memory.DeliveryStatus{{Target: "telegram:1", Status: "delivered", PlatformID: "9"}}})
	mustNo(t, err)
	mustNo(t, s.Audit(ctx, memory.AuditRecord{Actor: "telegram:user:42", Action: "reset", Session: "telegram:1"}))
	mustNo(t, s.KVPut(ctx, "telegram.offset", []byte("12345")))

	mustNo(t, s.Close())
	mustNo(t, s.Close()) // idempotent
	if _, err := s.LoadHistory(ctx, "telegram:1", 0); !errors.Is(err, memory.ErrClosed) {
		t.Errorf("LoadHistory after Close: err = %v, want memory.ErrClosed", err)
	}

	s = h.openAt(t, path, TestOptions(clk))
	hist, err := s.LoadHistory(ctx, "telegram:1", 0)
	mustNo(t, err)
	if len(hist) != 2 || hist[0].Content != "hello" || hist[1].Content != "hi ann" || hist[0].Name != "ann" {
		t.Errorf("history after reopen = %+v", hist)
	}
	meta, ok, err := s.Session(ctx, "telegram:1")
	mustNo(t, err)
	if !ok || meta.Persona != "buddy" || meta.Turns != 1 || meta.Messages != 2 || meta.Usage.TotalTokens != 13 || meta.LastTurnID != "t1" {
		t.Errorf("session meta after reopen = %+v (found %v)", meta, ok)
	}
	notes, err := s.ListNotes(ctx, "telegram:user:42")
	mustNo(t, err)
	if len(notes) != 1 || notes[0] != note {
		t.Errorf("notes after reopen = %+v, want [%+v]", notes, note)
	}
	if _, dup, err := s.Accept(ctx, memory.InboxItem{Channel: "telegram", MessageID: "m1"}); err != nil || !dup {
		t.Errorf("Accept of m1 after reopen: dup=%v err=%v, want duplicate", dup, err)
	}
	items, err := s.InboxPending(ctx)
	mustNo(t, err)
	if len(items) != 1 || items[0].ID != inID || string(items[0].Payload) != `{"text":"hello"}` || items[0].State != memory.InboxPending {
		t.Errorf("inbox after reopen = %+v", items)
	}
	ob, err := s.OutboxForTurn(ctx, "t1")
	mustNo(t, err)
	if len(ob) != 1 || ob[0].Status != memory.OutboxDelivered || ob[0].PlatformID != "555" {
		t.Errorf("outbox after reopen = %+v", ob)
	}
	checkReopenedRecords(t, s, clk, runID)
}

// checkReopenedRecords checks the jobs, runs, audit and kv that
// testReopenKeepsEverything wrote before the reopen.
func checkReopenedRecords(t *testing.T, s memory.Store, clk *Clock, runID uint64) {
	t.Helper()
	ctx := context.Background()
	job, ok, err := s.GetJob(ctx, "daily")
	mustNo(t, err)
	if !ok || string(job.Spec) != `{"schedule":"0 9 * * *"}` {
		t.Errorf("job after reopen = %+v found=%v", job, ok)
	}
	runs, err := s.ListRuns(ctx, "daily", 0)
	mustNo(t, err)
	if len(runs) != 1 || runs[0].ID != runID || runs[0].Deliveries[0].PlatformID != "9" {
		t.Errorf("runs after reopen = %+v", runs)
	}
	audit, err := s.ListAudit(ctx, memory.AuditFilter{})
	mustNo(t, err)
	if len(audit) != 1 || audit[0].Action != "reset" || !audit[0].Time.Equal(clk.Now()) {
		t.Errorf("audit after reopen = %+v", audit)
	}
	v, ok, err := s.KVGet(ctx, "telegram.offset")
	mustNo(t, err)
	if !ok || string(v) != "12345" {
		t.Errorf("kv after reopen = %q found=%v", v, ok)
	}
}

func (h harness) testStatsAndCheck(t *testing.T) {
	ctx := context.Background()
	s, _, _ := h.openTest(t)
	mustNo(t, s.AppendTurn(ctx, "a:1", memory.Turn{ID: "t1", Messages: []memory.Message{{Role: memory.RoleUser, Content: "q"}, {Role: memory.RoleAssistant, Content: "a"}}}))
	mustNo(t, s.AppendTurn(ctx, "a:2", memory.Turn{ID: "t2", Messages: []memory.Message{{Role: memory.RoleUser, Content: "q"}}}))
	mustNo(t, s.ResetSession(ctx, "a:2"))
	_, err := s.AddNote(ctx, "a:1", "n")
	mustNo(t, err)
	id1, _, err := s.Accept(ctx, memory.InboxItem{Channel: "a", MessageID: "1"})
	mustNo(t, err)
	_, _, err = s.Accept(ctx, memory.InboxItem{Channel: "a", MessageID: "2"})
	mustNo(t, err)
	mustNo(t, s.AppendTurn(ctx, "a:1", memory.Turn{ID: "t3", Sources: []uint64{id1}, Answer: "x", Messages: []memory.Message{{Role: memory.RoleUser, Content: "q"}}}))
	_, err = s.OutboxIntent(ctx, memory.OutboxRecord{Target: "a:1", TurnID: "t3", Text: "x"})
	mustNo(t, err)
	mustNo(t, s.KVPut(ctx, "k", []byte("v")))

	st, err := s.Stats(ctx)
	mustNo(t, err)
	want := memory.Stats{Path: s.Path(), FileSize: st.FileSize, Sessions: 2, Messages: 3, Archives: 1, Notes: 1, DedupRecords: 2,
		InboxPending: 1, InboxAnswered: 1, OutboxPending: 1, OutboxTotal: 1, KV: 1}
	if st != want {
		t.Errorf("Stats = %+v\nwant    %+v", st, want)
	}
	if st.FileSize <= 0 {
		t.Errorf("FileSize = %d", st.FileSize)
	}
	if err := s.Check(); err != nil {
		t.Errorf("Check on a healthy file: %v", err)
	}
}

func (h harness) testCanceledContext(t *testing.T) {
	s, _, _ := h.openTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := s.Accept(ctx, memory.InboxItem{Channel: "a", MessageID: "1"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Accept with canceled ctx: %v", err)
	}
	items, err := s.InboxPending(context.Background())
	mustNo(t, err)
	if len(items) != 0 {
		t.Errorf("canceled Accept wrote %d items", len(items))
	}
}

func (h harness) testKV(t *testing.T) {
	ctx := context.Background()
	s, _, _ := h.openTest(t)
	if _, ok, err := s.KVGet(ctx, "missing"); err != nil || ok {
		t.Errorf("KVGet missing: ok=%v err=%v", ok, err)
	}
	val := []byte("abc")
	mustNo(t, s.KVPut(ctx, "pair:ABC123", val))
	val[0] = 'X' // the store must have copied it
	got, ok, err := s.KVGet(ctx, "pair:ABC123")
	mustNo(t, err)
	if !ok || string(got) != "abc" {
		t.Errorf("KVGet = %q %v", got, ok)
	}
	mustNo(t, s.KVPut(ctx, "pair:ABC123", []byte("def")))
	got, _, _ = s.KVGet(ctx, "pair:ABC123")
	if string(got) != "def" {
		t.Errorf("KVPut did not replace: %q", got)
	}
	mustNo(t, s.KVDelete(ctx, "pair:ABC123"))
	mustNo(t, s.KVDelete(ctx, "pair:ABC123"))
	if _, ok, _ := s.KVGet(ctx, "pair:ABC123"); ok {
		t.Error("key still present after KVDelete")
	}
	if err := s.KVPut(ctx, "", nil); err == nil {
		t.Error("KVPut with empty key succeeded")
	}
	mustNo(t, s.Close())
	if err := s.KVPut(ctx, "pair:SECRET9", []byte("v")); err == nil || strings.Contains(err.Error(), "SECRET9") {
		t.Errorf("KVPut on closed store: err = %v (must fail without echoing the key)", err)
	}
}
