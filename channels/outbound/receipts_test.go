package outbound_test

import (
	"context"
	"fmt"
	"io/fs"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// fullDiskReceipts wraps a real store whose receipt writes fail like bolt's
// on a full disk (a *fs.PathError wrapping ENOSPC) while full is set.
type fullDiskReceipts struct {
	*bolt.Store
	full atomic.Bool
}

func enospc(op string) error {
	return fmt.Errorf("memory: %s: %w", op, &fs.PathError{Op: "write", Path: "/data/switchboard.db", Err: syscall.ENOSPC})
}

func (f *fullDiskReceipts) OutboxResult(ctx context.Context, id uint64, status, pid, errText string) error {
	if f.full.Load() {
		return enospc("outbox result")
	}
	return f.Store.OutboxResult(ctx, id, status, pid, errText)
}

func (f *fullDiskReceipts) RecordDelivery(ctx context.Context, d memory.DeliveryRecord) ([]uint64, error) {
	if f.full.Load() && len(d.Receipts) > 0 {
		return nil, enospc("record delivery")
	}
	return f.Store.RecordDelivery(ctx, d)
}

// outboxOnly hides the store's memory.Lifecycle: one write per record.
type outboxOnly struct{ outbound.Outbox }

// A chunk that reached the platform but whose receipt the full disk refused
// is not sent a second time by the next delivery of the same turn (the final
// answer after a streamed draft, or a retry); its receipt is stored once the
// disk has space. Both ways of writing receipts: one transaction per delivery
// step (memory.Lifecycle) and one write per record.
func TestUnrecordedReceiptIsNotResent(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(*fullDiskReceipts) outbound.Outbox
	}{
		{"delivery steps", func(f *fullDiskReceipts) outbound.Outbox { return f }},
		{"one write per record", func(f *fullDiskReceipts) outbound.Outbox { return outboxOnly{f} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			disk := &fullDiskReceipts{Store: openStore(t)}
			out := outbound.New(tc.wrap(disk), outbound.Options{BaseDelay: time.Millisecond})
			ch := console.NewMemory("memory", 4000, time.Millisecond)
			d := outbound.Delivery{Target: channels.Target{Channel: "memory", ChatID: "c1"}, TurnID: "in-7", Markdown: "the answer"}
			ctx := context.Background()

			disk.full.Store(true)
			if _, err := out.Deliver(ctx, ch, d); err != nil {
				t.Fatalf("deliver: %v", err)
			}
			disk.full.Store(false)
			if _, err := out.Deliver(ctx, ch, d); err != nil {
				t.Fatalf("deliver again: %v", err)
			}
			if got := ch.Sent("memory:c1"); len(got) != 1 {
				t.Fatalf("sent %d messages %+v; want the answer once", len(got), got)
			}
			recs, err := disk.OutboxForTurn(ctx, "in-7")
			if err != nil || len(recs) != 1 || recs[0].Status != memory.OutboxDelivered {
				t.Fatalf("outbox = %+v, %v; want one delivered record", recs, err)
			}
			if out.Stats().Resent != 0 {
				t.Errorf("counted %d resends, want 0", out.Stats().Resent)
			}
		})
	}
}
