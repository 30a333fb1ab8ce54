package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-bot/switchboard/memory"
)

// CommitTurn writes the turn, its first send intents, its audit records and
// the inbox items it finishes in one transaction (memory.Lifecycle). A
// commit with an invalid intent writes nothing.
func (s *Store) CommitTurn(ctx context.Context, key string, c memory.TurnCommit) ([]uint64, error) {
	op := "commit turn of " + key
	now := s.now()
	c, err := memory.PrepareCommit(key, c, now)
	if err != nil {
		return nil, err
	}
	intents, audit := c.Intents, c.Audit
	var msgs []byte
	if c.Turn != nil {
		if msgs, err = json.Marshal(c.Turn.Messages); err != nil {
			return nil, fmt.Errorf("memory: %s: encode messages: %w", op, err)
		}
	}
	var out []uint64
	err = s.tx(ctx, op, func(tx pgx.Tx) error {
		out = nil
		if c.Turn != nil {
			if err := appendTurnTx(ctx, tx, key, *c.Turn, msgs, now); err != nil {
				return err
			}
		}
		var err error
		if out, err = putIntentsTx(ctx, tx, intents); err != nil {
			return err
		}
		if err := auditAllTx(ctx, tx, audit); err != nil {
			return err
		}
		return inboxDoneTx(ctx, tx, c.Done)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RecordDelivery writes a delivery step's receipts, next intents, audit
// records and finished inbox items in one transaction (memory.Lifecycle);
// a receipt for an unknown intent is ErrNotFound and nothing is written.
func (s *Store) RecordDelivery(ctx context.Context, d memory.DeliveryRecord) ([]uint64, error) {
	now := s.now()
	d, err := memory.PrepareDelivery(d, now)
	if err != nil {
		return nil, err
	}
	intents, audit := d.Intents, d.Audit
	var out []uint64
	err = s.tx(ctx, "record delivery", func(tx pgx.Tx) error {
		out = nil
		for _, r := range d.Receipts {
			if err := receiptTx(ctx, tx, r, now); err != nil {
				return err
			}
		}
		var err error
		if out, err = putIntentsTx(ctx, tx, intents); err != nil {
			return err
		}
		if err := auditAllTx(ctx, tx, audit); err != nil {
			return err
		}
		return inboxDoneTx(ctx, tx, d.Done)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func putIntentsTx(ctx context.Context, tx pgx.Tx, intents []memory.OutboxRecord) ([]uint64, error) {
	var out []uint64
	for _, r := range intents {
		id, err := putIntentTx(ctx, tx, r)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

func auditAllTx(ctx context.Context, tx pgx.Tx, recs []memory.AuditRecord) error {
	for _, r := range recs {
		if err := auditTx(ctx, tx, r); err != nil {
			return err
		}
	}
	return nil
}
