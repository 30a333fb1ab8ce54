package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

func (h harness) testAcceptDetectsDuplicates(t *testing.T) {
	ctx := context.Background()
	s, clk, path := h.openTest(t)
	id1, dup, err := s.Accept(ctx, memory.InboxItem{Channel: "telegram", MessageID: "100", SessionKey: "telegram:1", Payload: []byte("p1")})
	mustNo(t, err)
	if dup || id1 == 0 {
		t.Fatalf("first Accept: id=%d dup=%v", id1, dup)
	}
	cases := []struct {
		name    string
		item    memory.InboxItem
		wantDup bool
	}{
		{"same channel and id", memory.InboxItem{Channel: "telegram", MessageID: "100"}, true},
		{"same id on another channel", memory.InboxItem{Channel: "discord", MessageID: "100"}, false},
		{"another id", memory.InboxItem{Channel: "telegram", MessageID: "101"}, false},
		{"no message id is never a duplicate", memory.InboxItem{Channel: "console", MessageID: ""}, false},
		{"no message id again", memory.InboxItem{Channel: "console", MessageID: ""}, false},
	}
	for _, c := range cases {
		id, dup, err := s.Accept(ctx, c.item)
		mustNo(t, err)
		if dup != c.wantDup || (dup && id != 0) || (!dup && id == 0) {
			t.Errorf("%s: id=%d dup=%v, want dup=%v", c.name, id, dup, c.wantDup)
		}
	}
	items, err := s.InboxPending(ctx)
	mustNo(t, err)
	if len(items) != 5 {
		t.Errorf("inbox holds %d items, want 5 (duplicates write nothing)", len(items))
	}
	if items[0].ID != id1 || items[0].Received != clk.Now() || items[0].State != memory.InboxPending || string(items[0].Payload) != "p1" {
		t.Errorf("first item = %+v", items[0])
	}
	for i := 1; i < len(items); i++ {
		if items[i].ID <= items[i-1].ID {
			t.Errorf("inbox not ordered by ID: %d after %d", items[i].ID, items[i-1].ID)
		}
	}

	// The dedup record survives a restart, even after the item is done.
	mustNo(t, s.InboxDone(ctx, id1))
	mustNo(t, s.Close())
	s = h.openAt(t, path, TestOptions(clk))
	if _, dup, err := s.Accept(ctx, memory.InboxItem{Channel: "telegram", MessageID: "100"}); err != nil || !dup {
		t.Errorf("redelivery after restart: dup=%v err=%v, want duplicate", dup, err)
	}
}

func (h harness) testConcurrentAcceptOfSameMessageAcceptsOnce(t *testing.T) {
	ctx := context.Background()
	s, _, _ := h.openTest(t)
	const n = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted, dups := 0, 0
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Half the goroutines redeliver the same message; the other half send distinct ones.
			msgID := "same"
			if i%2 == 1 {
				msgID = fmt.Sprintf("distinct-%d", i)
			}
			_, dup, err := s.Accept(ctx, memory.InboxItem{Channel: "slack", MessageID: msgID})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if dup {
				dups++
			} else {
				accepted++
			}
		}()
	}
	wg.Wait()
	if accepted != n/2+1 || dups != n/2-1 {
		t.Errorf("accepted=%d duplicates=%d, want %d and %d", accepted, dups, n/2+1, n/2-1)
	}
	items, err := s.InboxPending(ctx)
	mustNo(t, err)
	if len(items) != n/2+1 {
		t.Errorf("inbox holds %d items, want %d", len(items), n/2+1)
	}
}

func (h harness) testDedupRecordsExpire(t *testing.T) {
	ctx := context.Background()
	clk := NewClock()
	opts := TestOptions(clk)
	opts.DedupTTL = time.Hour
	s := h.openAt(t, t.TempDir(), opts)

	_, _, err := s.Accept(ctx, memory.InboxItem{Channel: "discord", MessageID: "m1"})
	mustNo(t, err)
	clk.Advance(30 * time.Minute)
	_, _, err = s.Accept(ctx, memory.InboxItem{Channel: "discord", MessageID: "m2"})
	mustNo(t, err)

	clk.Advance(30*time.Minute - time.Nanosecond) // m1 expires in 1ns
	if _, dup, _ := s.Accept(ctx, memory.InboxItem{Channel: "discord", MessageID: "m1"}); !dup {
		t.Fatal("m1 no longer blocked before its TTL elapsed")
	}
	clk.Advance(time.Nanosecond)
	if seen, _ := s.Seen(ctx, "discord", "m1"); seen {
		t.Error("Seen(m1) after expiry = true")
	}
	if seen, _ := s.Seen(ctx, "discord", "m2"); !seen {
		t.Error("Seen(m2) = false before expiry")
	}

	// Prune removes exactly the expired record, and m2 still blocks.
	res, err := s.PruneCounts(ctx)
	mustNo(t, err)
	if res.Dedup != 1 {
		t.Errorf("pruned %d dedup records, want 1", res.Dedup)
	}
	st, _ := s.Stats(ctx)
	if st.DedupRecords != 1 {
		t.Errorf("%d dedup records left, want 1", st.DedupRecords)
	}
	if _, dup, _ := s.Accept(ctx, memory.InboxItem{Channel: "discord", MessageID: "m2"}); !dup {
		t.Error("m2 was pruned before its expiry")
	}
	// An expired message may come in again, and is then blocked for a new TTL.
	if _, dup, _ := s.Accept(ctx, memory.InboxItem{Channel: "discord", MessageID: "m1"}); dup {
		t.Error("m1 still blocked after expiry and prune")
	}
	if _, dup, _ := s.Accept(ctx, memory.InboxItem{Channel: "discord", MessageID: "m1"}); !dup {
		t.Error("re-accepted m1 is not blocked")
	}

	// An expired record that was not pruned yet does not block either, and
	// the later prune keeps the renewed record.
	clk.Advance(2 * time.Hour)
	if _, dup, _ := s.Accept(ctx, memory.InboxItem{Channel: "discord", MessageID: "m2"}); dup {
		t.Error("expired, unpruned m2 still blocks")
	}
	_, err = s.PruneCounts(ctx)
	mustNo(t, err)
	if _, dup, _ := s.Accept(ctx, memory.InboxItem{Channel: "discord", MessageID: "m2"}); !dup {
		t.Error("prune dropped m2's renewed dedup record")
	}
}

func (h harness) testOutbox(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := h.openTest(t)
	var ids []uint64
	for chunk := 0; chunk < 3; chunk++ {
		id, err := s.OutboxIntent(ctx, memory.OutboxRecord{Target: "telegram:1", TurnID: "turn-a", Chunk: chunk, Text: fmt.Sprintf("part %d", chunk)})
		mustNo(t, err)
		ids = append(ids, id)
	}
	other, err := s.OutboxIntent(ctx, memory.OutboxRecord{Target: "telegram:2", TurnID: "turn-ab", Text: "x"})
	mustNo(t, err)
	clk.Advance(time.Second)
	mustNo(t, s.OutboxResult(ctx, ids[0], memory.OutboxDelivered, "m-17", ""))
	mustNo(t, s.OutboxResult(ctx, ids[1], memory.OutboxFailed, "", "403 Forbidden: bot was blocked by the user"))

	recs, err := s.OutboxForTurn(ctx, "turn-a")
	mustNo(t, err)
	if len(recs) != 3 {
		t.Fatalf("OutboxForTurn = %+v, want 3 records of turn-a only", recs)
	}
	want := []struct {
		status, platformID, errText string
	}{{memory.OutboxDelivered, "m-17", ""}, {memory.OutboxFailed, "", "403 Forbidden: bot was blocked by the user"}, {memory.OutboxPending, "", ""}}
	for i, r := range recs {
		if r.ID != ids[i] || r.Chunk != i || r.Text != fmt.Sprintf("part %d", i) || r.Status != want[i].status ||
			r.PlatformID != want[i].platformID || r.Error != want[i].errText || r.Target != "telegram:1" {
			t.Errorf("record %d = %+v, want %+v", i, r, want[i])
		}
	}
	if !recs[0].Updated.Equal(recs[0].Created.Add(time.Second)) || !recs[2].Updated.Equal(recs[2].Created) {
		t.Errorf("timestamps: %+v", recs)
	}
	pending, err := s.OutboxPending(ctx)
	mustNo(t, err)
	if len(pending) != 2 || pending[0].ID != ids[2] || pending[1].ID != other {
		t.Errorf("OutboxPending = %+v", pending)
	}
	if err := s.OutboxResult(ctx, 999, memory.OutboxDelivered, "", ""); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("OutboxResult unknown id: %v, want memory.ErrNotFound", err)
	}
	if err := s.OutboxResult(ctx, ids[2], "sent", "", ""); err == nil {
		t.Error("OutboxResult accepted an invalid status")
	}
	if recs, _ := s.OutboxForTurn(ctx, "turn-none"); len(recs) != 0 {
		t.Errorf("OutboxForTurn unknown = %+v", recs)
	}
}
