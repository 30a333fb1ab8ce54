package outbound

import (
	"context"
	"sync"

	"github.com/switchboard-bot/switchboard/memory"
)

// maxUnrecorded bounds the receipts kept in memory while the store cannot
// write them.
const maxUnrecorded = 10000

// receipt is a platform's answer to a send whose outbox record could not be
// completed.
type receipt struct {
	status, platformID, errText string
}

// receiptOutbox wraps the Outbound's outbox: a receipt the store cannot write
// (disk full) is kept in memory, and records read back for a turn carry it,
// so a later Deliver of the same turn in this process does not take the
// chunk for a send cut off by a crash and send it a second time (the final
// answer after a streamed draft, a delivery retried after a storage failure).
// Each read tries to store the kept receipts again.
type receiptOutbox struct {
	Outbox
	mu sync.Mutex
	m  map[uint64]receipt
}

func (o *receiptOutbox) OutboxResult(ctx context.Context, id uint64, status, platformID, errText string) error {
	err := o.Outbox.OutboxResult(ctx, id, status, platformID, errText)
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case err == nil:
		delete(o.m, id)
	case memory.IsStorageError(err) && len(o.m) < maxUnrecorded:
		if o.m == nil {
			o.m = map[uint64]receipt{}
		}
		o.m[id] = receipt{status: status, platformID: platformID, errText: errText}
	}
	return err
}

func (o *receiptOutbox) OutboxForTurn(ctx context.Context, turnID string) ([]memory.OutboxRecord, error) {
	recs, err := o.Outbox.OutboxForTurn(ctx, turnID)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		r := &recs[i]
		if r.Status != memory.OutboxPending {
			continue
		}
		o.mu.Lock()
		kept, ok := o.m[r.ID]
		o.mu.Unlock()
		if !ok {
			continue
		}
		r.Status, r.PlatformID, r.Error = kept.status, kept.platformID, kept.errText
		_ = o.OutboxResult(ctx, r.ID, kept.status, kept.platformID, kept.errText) // store it now if possible
	}
	return recs, nil
}

// recordDelivery writes a delivery step through lc (memory.Lifecycle): one
// transaction for the receipts, the next intents and the finished items. The
// receipts of a step the store refused (disk full) are kept like
// OutboxResult's, so a retried delivery does not take those chunks for
// sends a crash cut off.
func (o *receiptOutbox) recordDelivery(ctx context.Context, lc memory.Lifecycle, d memory.DeliveryRecord) ([]uint64, error) {
	ids, err := lc.RecordDelivery(ctx, d)
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range d.Receipts {
		switch {
		case err == nil:
			delete(o.m, r.ID)
		case memory.IsStorageError(err) && len(o.m) < maxUnrecorded:
			if o.m == nil {
				o.m = map[uint64]receipt{}
			}
			o.m[r.ID] = receipt{status: r.Status, platformID: r.PlatformID, errText: r.Error}
		}
	}
	return ids, err
}
