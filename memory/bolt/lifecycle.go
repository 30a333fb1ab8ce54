package bolt

import (
	"context"
	"fmt"

	"github.com/switchboard-bot/switchboard/memory"

	bbolt "go.etcd.io/bbolt"
)

// CommitTurn writes the turn, its first send intents, its audit records and
// the inbox items it finishes in one transaction (memory.Lifecycle). It goes
// through the batch path, so concurrent sessions share one fsync.
func (s *Store) CommitTurn(ctx context.Context, key string, c memory.TurnCommit) ([]uint64, error) {
	op := func() string { return "commit turn of " + key }
	if c.Turn != nil {
		if key == "" {
			return nil, errEmptyKey("commit turn")
		}
		if len(c.Turn.Messages) == 0 {
			return nil, fmt.Errorf("memory: %s: turn has no messages", op())
		}
	}
	now := s.now()
	intents, err := memory.PrepareIntents(c.Intents, now)
	if err != nil {
		return nil, err
	}
	audit := memory.StampAudit(c.Audit, now)
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
	if err := memory.CheckReceipts(d.Receipts); err != nil {
		return nil, err
	}
	intents, err := memory.PrepareIntents(d.Intents, now)
	if err != nil {
		return nil, err
	}
	audit := memory.StampAudit(d.Audit, now)
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
