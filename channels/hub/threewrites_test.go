package hub_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
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

// writeLog is a real store that records every write the handler makes, by
// kind, in order.
type writeLog struct {
	*bolt.Store
	mu     sync.Mutex
	writes []string
}

func (w *writeLog) note(kind string) {
	w.mu.Lock()
	w.writes = append(w.writes, kind)
	w.mu.Unlock()
}

func (w *writeLog) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.writes...)
}

func (w *writeLog) Accept(ctx context.Context, it memory.InboxItem) (uint64, bool, error) {
	w.note("accept")
	return w.Store.Accept(ctx, it)
}
func (w *writeLog) CommitTurn(ctx context.Context, key string, c memory.TurnCommit) ([]uint64, error) {
	w.note("commit")
	return w.Store.CommitTurn(ctx, key, c)
}
func (w *writeLog) RecordDelivery(ctx context.Context, d memory.DeliveryRecord) ([]uint64, error) {
	w.note("delivery")
	return w.Store.RecordDelivery(ctx, d)
}
func (w *writeLog) AppendTurn(ctx context.Context, key string, t memory.Turn) error {
	w.note("append-turn")
	return w.Store.AppendTurn(ctx, key, t)
}
func (w *writeLog) OutboxIntent(ctx context.Context, r memory.OutboxRecord) (uint64, error) {
	w.note("intent")
	return w.Store.OutboxIntent(ctx, r)
}
func (w *writeLog) OutboxResult(ctx context.Context, id uint64, status, pid, errText string) error {
	w.note("receipt")
	return w.Store.OutboxResult(ctx, id, status, pid, errText)
}
func (w *writeLog) InboxDone(ctx context.Context, ids ...uint64) error {
	w.note("inbox-done")
	return w.Store.InboxDone(ctx, ids...)
}
func (w *writeLog) Audit(ctx context.Context, rec memory.AuditRecord) error {
	w.note("audit")
	return w.Store.Audit(ctx, rec)
}
func (w *writeLog) KVPut(ctx context.Context, key string, val []byte) error {
	w.note("kv")
	return w.Store.KVPut(ctx, key, val)
}

// plainChannel is the in-memory channel without editing (no streamed drafts):
// every platform call of an answer is a send.
type plainChannel struct{ m *console.Memory }

func (p plainChannel) Name() string                                   { return p.m.Name() }
func (p plainChannel) Run(ctx context.Context, s channels.Sink) error { return p.m.Run(ctx, s) }
func (p plainChannel) Send(ctx context.Context, out channels.Outgoing) (string, error) {
	return p.m.Send(ctx, out)
}
func (p plainChannel) Format(md string) []channels.Chunk { return p.m.Format(md) }

// Issue 19: a message costs three store writes — accept, the turn's commit
// (with its tool audit and the first send intent), the receipt with the
// inbox item done — and an answer of n chunks n+2, an intent before every
// send and a receipt after it.
func TestEachMessageCostsThreeWrites(t *testing.T) {
	long := strings.Repeat("word ", 1900) // ~9,500 chars: 3 chunks of 4,000
	cases := []struct {
		name       string
		responder  fakellm.Responder
		editable   bool
		wantWrites []string
		wantChunks int
		wantAudit  int
	}{
		{"short answer", fakellm.Text("hello there"), false,
			[]string{"accept", "commit", "delivery"}, 1, 0},
		{"tool call then answer", fakellm.Match(
			fakellm.Rule{When: fakellm.AfterToolResult, Respond: fakellm.Reply(fakellm.Response{Content: "it is done"})},
			fakellm.Rule{When: func(*fakellm.Request) bool { return true }, Respond: fakellm.Reply(fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "touch", Arguments: `{"path":"a"}`}}})}),
			false, []string{"accept", "commit", "delivery"}, 1, 1},
		{"three chunks", fakellm.Text(long), false,
			[]string{"accept", "commit", "delivery", "delivery", "delivery"}, 3, 0},
		{"short answer on an editing channel", fakellm.Text("hi"), true,
			[]string{"accept", "commit", "delivery"}, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			llm := fakellm.Start(t, tc.responder)
			st, err := bolt.Open(filepath.Join(t.TempDir(), "switchboard.db"), memory.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			w := &writeLog{Store: st}
			reg := agent.NewRegistry()
			if err := reg.Register(&sideEffectTool{name: "touch"}); err != nil {
				t.Fatal(err)
			}
			ag, err := agent.New(agent.Options{BaseURL: llm.URL, APIKey: "k", Model: "m", MaxRetries: 1,
				RetryBase: time.Millisecond, Timeout: 5 * time.Second, HTTPClient: llm.HTTPClient(), Sessions: w, Tools: reg})
			if err != nil {
				t.Fatal(err)
			}
			mem := console.NewMemory("memory", 4000, 5*time.Millisecond)
			var ch channels.Channel = plainChannel{mem}
			if tc.editable {
				ch = mem
			}
			h := hub.NewHandler(hub.HandlerOptions{Store: w, Agent: ag, Access: openAccess(),
				Outbound: outbound.New(w, outbound.Options{BaseDelay: time.Millisecond})})
			h.Register(ch)
			mem.Attach(h)
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				h.Close(ctx)
				_ = st.Close()
			}()
			if err := mem.Say(context.Background(), channels.Message{ChatID: "c1", MessageID: "m1",
				Sender: channels.Sender{ID: "u1", Name: "U"}, Text: "go", Direct: true}); err != nil {
				t.Fatal(err)
			}
			sent := mem.WaitSent(t, "memory:c1", tc.wantChunks, wait)
			waitFor(t, "the inbox to be cleared", func() bool {
				p, err := st.InboxPending(context.Background())
				return err == nil && len(p) == 0
			})
			if got := w.list(); strings.Join(got, ",") != strings.Join(tc.wantWrites, ",") {
				t.Errorf("store writes = %v, want %v", got, tc.wantWrites)
			}
			recs, err := st.OutboxForTurn(context.Background(), "in-1")
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != tc.wantChunks || len(sent) != tc.wantChunks {
				t.Fatalf("outbox %d records, %d messages on the platform; want %d", len(recs), len(sent), tc.wantChunks)
			}
			for i, r := range recs {
				if r.Status != memory.OutboxDelivered || r.PlatformID != sent[i].ID || r.Chunk != i {
					t.Errorf("outbox record %d = %+v, want the receipt of message %s", i, r, sent[i].ID)
				}
			}
			audit, err := st.ListAudit(context.Background(), memory.AuditFilter{Session: "memory:c1"})
			if err != nil {
				t.Fatal(err)
			}
			if len(audit) != tc.wantAudit {
				t.Errorf("audit = %+v, want %d tool record(s)", audit, tc.wantAudit)
			}
		})
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
