package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/memory"
)

// testLifecycleThreeWrites walks one message through the three writes:
// Accept, CommitTurn (turn, answered item, first intent, audit) and
// RecordDelivery (receipt, item done), and checks each step's records, also
// after a reopen.
func (h harness) testLifecycleThreeWrites(t *testing.T) {
	ctx := context.Background()
	s, clk, dir := h.openTest(t)
	id, dup, err := s.Accept(ctx, memory.InboxItem{Channel: "slack", MessageID: "m1", SessionKey: "slack:C1", Payload: []byte(`{}`)})
	mustNo(t, err)
	if dup {
		t.Fatal("first Accept reported a duplicate")
	}
	turn := memory.Turn{ID: "in-1", Sources: []uint64{id}, Answer: "hello there",
		Messages: []memory.Message{{Role: memory.RoleUser, Content: "hi"}, {Role: memory.RoleAssistant, Content: "hello there"}}}
	intents, err := s.CommitTurn(ctx, "slack:C1", memory.TurnCommit{Turn: &turn,
		Intents: []memory.OutboxRecord{{Target: "slack:C1", TurnID: "in-1", Chunk: 0, Text: "hello there"}},
		Audit:   []memory.AuditRecord{{Actor: "slack:U1", Action: "tool.clock", Session: "slack:C1", Detail: "{}"}}})
	mustNo(t, err)
	if len(intents) != 1 || intents[0] == 0 {
		t.Fatalf("CommitTurn intents = %v, want one id", intents)
	}
	pending, err := s.InboxPending(ctx)
	mustNo(t, err)
	if len(pending) != 1 || pending[0].State != memory.InboxAnswered || pending[0].Answer != "hello there" || pending[0].TurnID != "in-1" {
		t.Fatalf("inbox after CommitTurn = %+v, want the item answered with the turn's answer", pending)
	}
	recs, err := s.OutboxForTurn(ctx, "in-1")
	mustNo(t, err)
	if len(recs) != 1 || recs[0].ID != intents[0] || recs[0].Status != memory.OutboxPending || recs[0].Text != "hello there" {
		t.Fatalf("outbox after CommitTurn = %+v, want one pending intent", recs)
	}
	hist, err := s.LoadHistory(ctx, "slack:C1", 0)
	mustNo(t, err)
	if len(hist) != 2 {
		t.Fatalf("history = %+v, want the turn's 2 messages", hist)
	}
	audit, err := s.ListAudit(ctx, memory.AuditFilter{Session: "slack:C1"})
	mustNo(t, err)
	if len(audit) != 1 || audit[0].Action != "tool.clock" || !audit[0].Time.Equal(clk.Now()) {
		t.Fatalf("audit = %+v, want the turn's record stamped with the store clock", audit)
	}

	_, err = s.RecordDelivery(ctx, memory.DeliveryRecord{
		Receipts: []memory.Receipt{{ID: intents[0], Status: memory.OutboxDelivered, PlatformID: "1700.1"}},
		Done:     []uint64{id}})
	mustNo(t, err)
	mustNo(t, s.Close())
	s = h.openAt(t, dir, TestOptions(clk))
	pending, err = s.InboxPending(ctx)
	mustNo(t, err)
	if len(pending) != 0 {
		t.Fatalf("inbox after RecordDelivery = %+v, want empty", pending)
	}
	recs, err = s.OutboxForTurn(ctx, "in-1")
	mustNo(t, err)
	if len(recs) != 1 || recs[0].Status != memory.OutboxDelivered || recs[0].PlatformID != "1700.1" {
		t.Fatalf("outbox after RecordDelivery = %+v, want the receipt", recs)
	}
	if dup, err := s.Seen(ctx, "slack", "m1"); err != nil || !dup {
		t.Fatalf("Seen after delivery = %v, %v; the dedup record must stay", dup, err)
	}
}

// testLifecycleChunksAndAtomicity: a multi-chunk delivery step writes the
// previous chunk's receipt with the next chunk's intent; a step with an
// unknown receipt writes nothing at all; a commit with an invalid intent
// writes no turn.
func (h harness) testLifecycleChunksAndAtomicity(t *testing.T) {
	ctx := context.Background()
	s, _, _ := h.openTest(t)
	id, _, err := s.Accept(ctx, memory.InboxItem{Channel: "discord", MessageID: "m9", SessionKey: "discord:9"})
	mustNo(t, err)
	turn := memory.Turn{ID: "in-9", Sources: []uint64{id}, Answer: "a b",
		Messages: []memory.Message{{Role: memory.RoleUser, Content: "q"}, {Role: memory.RoleAssistant, Content: "a b"}}}
	bad := memory.TurnCommit{Turn: &turn, Intents: []memory.OutboxRecord{{Target: "discord:9", TurnID: "in-9", Status: "sent"}}}
	if _, err := s.CommitTurn(ctx, "discord:9", bad); err == nil {
		t.Fatal("CommitTurn with an invalid intent status succeeded")
	}
	// A turn needs a session key and messages; a bad receipt status is refused.
	refused := []struct {
		what string
		err  error
		want string
	}{
		{"no key", commitErr(s.CommitTurn(ctx, "", memory.TurnCommit{Turn: &turn})), "empty session key"},
		{"no messages", commitErr(s.CommitTurn(ctx, "discord:9", memory.TurnCommit{Turn: &memory.Turn{ID: "in-9"}})), "turn has no messages"},
		{"bad receipt", commitErr(s.RecordDelivery(ctx, memory.DeliveryRecord{Receipts: []memory.Receipt{{ID: 1, Status: "sent"}}})), `invalid status "sent"`},
	}
	for _, r := range refused {
		if r.err == nil || !strings.Contains(r.err.Error(), r.want) {
			t.Errorf("%s: %v, want an error saying %q", r.what, r.err, r.want)
		}
	}
	if hist, _ := s.LoadHistory(ctx, "discord:9", 0); len(hist) != 0 {
		t.Fatalf("a refused commit left history %+v", hist)
	}
	first, err := s.CommitTurn(ctx, "discord:9", memory.TurnCommit{Turn: &turn,
		Intents: []memory.OutboxRecord{{Target: "discord:9", TurnID: "in-9", Chunk: 0, Text: "a"}}})
	mustNo(t, err)
	second, err := s.RecordDelivery(ctx, memory.DeliveryRecord{
		Receipts: []memory.Receipt{{ID: first[0], Status: memory.OutboxDelivered, PlatformID: "p0"}},
		Intents:  []memory.OutboxRecord{{Target: "discord:9", TurnID: "in-9", Chunk: 1, Text: "b"}}})
	mustNo(t, err)
	if len(second) != 1 || second[0] == first[0] {
		t.Fatalf("RecordDelivery intents = %v", second)
	}
	_, err = s.RecordDelivery(ctx, memory.DeliveryRecord{
		Receipts: []memory.Receipt{{ID: second[0], Status: memory.OutboxDelivered, PlatformID: "p1"}, {ID: 987654, Status: memory.OutboxDelivered}},
		Done:     []uint64{id}})
	if !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("RecordDelivery with an unknown receipt: %v, want ErrNotFound", err)
	}
	recs, err := s.OutboxForTurn(ctx, "in-9")
	mustNo(t, err)
	if len(recs) != 2 || recs[0].Status != memory.OutboxDelivered || recs[1].Status != memory.OutboxPending || recs[1].Chunk != 1 {
		t.Fatalf("outbox = %+v, want chunk 0 delivered and chunk 1 still pending (the failed step wrote nothing)", recs)
	}
	if pending, _ := s.InboxPending(ctx); len(pending) != 1 {
		t.Fatalf("inbox = %+v, want the item kept by the failed step", pending)
	}
	// A commit without a turn: an answer made without the model (AlreadySent) finishes its item.
	_, err = s.CommitTurn(ctx, "", memory.TurnCommit{Done: []uint64{id},
		Audit: []memory.AuditRecord{{Actor: "system", Action: "answer.skipped"}}})
	mustNo(t, err)
	if pending, _ := s.InboxPending(ctx); len(pending) != 0 {
		t.Fatalf("inbox after a turnless commit = %+v, want empty", pending)
	}
}

func commitErr(_ []uint64, err error) error { return err }
