package bolt

import (
	"context"

	"github.com/switchboard-bot/switchboard/memory"

	bbolt "go.etcd.io/bbolt"
)

// CommitTurn writes the turn, its first send intents, its audit records and
// the inbox items it finishes in one transaction (memory.Lifecycle). It goes
// through the batch path, so concurrent sessions share one fsync.
func (s *Store) CommitTurn(ctx context.Context, key string, c memory.TurnCommit) ([]uint64, error) {
	op := func() string { return "commit turn of " + key }
	now := s.now()
	c, err := memory.PrepareCommit(key, c, now)
	if err != nil {
		return nil, err
	}
	intents, audit := c.Intents, c.Audit
	var ids []uint64
	err = s.batchOp(ctx, op, func(tx *bbolt.Tx) error {
		ids = ids[:0]
		a := newArena(commitArenaSize(c))
		if c.Turn != nil {
			if err := appendTurnTx(tx, &a, key, *c.Turn, now); err != nil {
				return err
			}
		}
		var err error
		if ids, err = putIntentsTx(tx, &a, intents, ids); err != nil {
			return err
		}
		if err := auditAllTx(tx, &a, audit); err != nil {
			return err
		}
		return inboxDoneTx(tx, c.Done)
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// RecordDelivery writes a delivery step's receipts, next intents, audit
// records and finished inbox items in one transaction (memory.Lifecycle).
func (s *Store) RecordDelivery(ctx context.Context, d memory.DeliveryRecord) ([]uint64, error) {
	now := s.now()
	d, err := memory.PrepareDelivery(d, now)
	if err != nil {
		return nil, err
	}
	intents, audit := d.Intents, d.Audit
	var ids []uint64
	err = s.batch(ctx, "record delivery", func(tx *bbolt.Tx) error {
		ids = ids[:0]
		a := newArena(deliveryArenaSize(d))
		for _, r := range d.Receipts {
			if err := receiptTx(tx, &a, r, now); err != nil {
				return err
			}
		}
		var err error
		if ids, err = putIntentsTx(tx, &a, intents, ids); err != nil {
			return err
		}
		if err := auditAllTx(tx, &a, audit); err != nil {
			return err
		}
		return inboxDoneTx(tx, d.Done)
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

func putIntentsTx(tx *bbolt.Tx, a *txArena, intents []memory.OutboxRecord, ids []uint64) ([]uint64, error) {
	for _, r := range intents {
		id, err := putIntentTx(tx, a, r)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func auditAllTx(tx *bbolt.Tx, a *txArena, recs []memory.AuditRecord) error {
	for _, r := range recs {
		if err := auditTx(tx, a, r); err != nil {
			return err
		}
	}
	return nil
}
