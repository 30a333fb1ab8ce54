package outbound_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// verifyingChannel is a Memory channel that can also answer whether a text
// already arrived (as Slack can, from conversation history).
type verifyingChannel struct {
	*console.Memory
	mu     sync.Mutex
	asked  int
	landed map[string]string // text → platform id of messages that reached the platform
}

func (v *verifyingChannel) Delivered(_ context.Context, out channels.Outgoing, _ time.Time) (string, bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.asked++
	id, ok := v.landed[out.Text]
	return id, ok, nil
}

// A chunk with a send intent but no receipt (the process died during the
// platform call) is looked up on platforms that can tell, and resent only
// where it did not arrive.
func TestUnconfirmedChunkIsVerifiedBeforeResending(t *testing.T) {
	ctx := context.Background()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "switchboard.db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	target := channels.Target{Channel: "memory", ChatID: "c1"}
	for _, text := range []string{"landed before the crash", "lost in the crash"} {
		if _, err := st.OutboxIntent(ctx, memory.OutboxRecord{Target: target.String(), TurnID: "t-" + text,
			Chunk: 0, Text: text, Status: memory.OutboxPending}); err != nil {
			t.Fatal(err)
		}
	}
	ch := &verifyingChannel{Memory: console.NewMemory("memory", 4000, 0),
		landed: map[string]string{"landed before the crash": "p-77"}}
	out := outbound.New(st, outbound.Options{})

	ids, err := out.Deliver(ctx, ch, outbound.Delivery{Target: target, TurnID: "t-landed before the crash", Markdown: "landed before the crash"})
	if err != nil || len(ids) != 1 || ids[0] != "p-77" {
		t.Fatalf("Deliver = %v, %v; want the id found on the platform", ids, err)
	}
	if sent := ch.Sent(""); len(sent) != 0 {
		t.Fatalf("a chunk that had arrived was sent again: %+v", sent)
	}
	recs, _ := st.OutboxForTurn(ctx, "t-landed before the crash")
	if len(recs) != 1 || recs[0].Status != memory.OutboxDelivered || recs[0].PlatformID != "p-77" {
		t.Fatalf("outbox = %+v; want the found receipt recorded", recs)
	}

	if _, err := out.Deliver(ctx, ch, outbound.Delivery{Target: target, TurnID: "t-lost in the crash", Markdown: "lost in the crash"}); err != nil {
		t.Fatal(err)
	}
	if sent := ch.Sent(""); len(sent) != 1 || sent[0].Text != "lost in the crash" {
		t.Fatalf("the lost chunk was not resent exactly once: %+v", sent)
	}
	if st := out.Stats(); st.Resent != 1 || ch.asked != 2 {
		t.Fatalf("resent %d (want 1), asked %d (want 2)", st.Resent, ch.asked)
	}
}
