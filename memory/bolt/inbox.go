package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"time"

	"github.com/switchboard-bot/switchboard/memory"

	bbolt "go.etcd.io/bbolt"
)

func dedupKey(channel, messageID string) []byte {
	k := make([]byte, 0, len(channel)+1+len(messageID))
	k = append(k, channel...)
	k = append(k, 0)
	return append(k, messageID...)
}

func dedupExpKey(expiry int64, dk []byte) []byte {
	return append(u64(uint64(expiry)), dk...)
}

// Accept records an inbound message in one durable transaction: if
// (Channel, MessageID) was already accepted and its dedup record has not
// expired, it returns duplicate=true and writes nothing; otherwise it writes the
// dedup record (expiring after Options.DedupTTL) and appends the item to the
// inbox, returning its ID. The commit is fsynced before Accept returns, so the
// caller may acknowledge the platform afterwards. Concurrent calls share a
// commit (DB.Batch). An empty MessageID skips dedup.
func (s *Store) Accept(ctx context.Context, item memory.InboxItem) (id uint64, duplicate bool, err error) {
	if item.Channel == "" {
		return 0, false, fmt.Errorf("memory: accept: empty channel")
	}
	now := s.now()
	if item.Received.IsZero() {
		item.Received = now
	}
	item.State = memory.InboxPending
	item.TurnID, item.Answer = "", ""
	expiry := now.Add(s.opts.DedupTTL).UnixNano()
	op := func() string { return fmt.Sprintf("accept %s message %q", item.Channel, item.MessageID) }
	err = s.batchOp(ctx, op, func(tx *bbolt.Tx) error {
		id, duplicate = 0, false // Batch may run this more than once
		if item.MessageID != "" {
			dedup, exp := tx.Bucket(bDedup), tx.Bucket(bDedupExp)
			dk := dedupKey(item.Channel, item.MessageID)
			if old := dedup.Get(dk); old != nil {
				oldExp := int64(fromU64(old))
				if oldExp > now.UnixNano() {
					duplicate = true
					return nil
				}
				if err := exp.Delete(dedupExpKey(oldExp, dk)); err != nil {
					return fmt.Errorf("drop expired dedup index: %w", err)
				}
			}
			if err := dedup.Put(dk, u64(uint64(expiry))); err != nil {
				return fmt.Errorf("write dedup record: %w", err)
			}
			if err := exp.Put(dedupExpKey(expiry, dk), nil); err != nil {
				return fmt.Errorf("write dedup index: %w", err)
			}
		}
		inbox := tx.Bucket(bInbox)
		seq, err := inbox.NextSequence()
		if err != nil {
			return fmt.Errorf("inbox sequence: %w", err)
		}
		it := item
		it.ID = seq
		a := newArena(256 + len(it.Payload)*4/3 + len(it.MessageID) + len(it.SessionKey))
		if err := a.put(inbox, seq, func(b []byte) ([]byte, error) { return appendInboxItem(b, &it) }); err != nil {
			return err
		}
		id = seq
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	return id, duplicate, nil
}

// Seen reports whether (channel, messageID) has an unexpired dedup record.
func (s *Store) Seen(ctx context.Context, channel, messageID string) (bool, error) {
	var seen bool
	now := s.now().UnixNano()
	err := s.view(ctx, "dedup lookup", func(tx *bbolt.Tx) error {
		v := tx.Bucket(bDedup).Get(dedupKey(channel, messageID))
		seen = v != nil && int64(fromU64(v)) > now
		return nil
	})
	return seen, err
}

// InboxPending returns every inbox item not yet removed with InboxDone
// (pending and answered), ordered by ID.
func (s *Store) InboxPending(ctx context.Context) ([]memory.InboxItem, error) {
	var out []memory.InboxItem
	err := s.view(ctx, "list inbox", func(tx *bbolt.Tx) error {
		return tx.Bucket(bInbox).ForEach(func(k, v []byte) error {
			var it memory.InboxItem
			if err := decodeRecord(v, &it); err != nil {
				return fmt.Errorf("decode inbox item %d: %w", fromU64(k), err)
			}
			out = append(out, it)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// InboxDone removes the items (their answers were delivered, or they were
// dropped on purpose). Unknown ids are ignored. The dedup records stay.
func (s *Store) InboxDone(ctx context.Context, ids ...uint64) error {
	if len(ids) == 0 {
		return nil
	}
	return s.batch(ctx, "inbox done", func(tx *bbolt.Tx) error {
		return inboxDoneTx(tx, ids)
	})
}

// inboxDoneTx deletes the inbox items ids inside tx.
func inboxDoneTx(tx *bbolt.Tx, ids []uint64) error {
	inbox := tx.Bucket(bInbox)
	for _, id := range ids {
		if err := inbox.Delete(u64(id)); err != nil {
			return fmt.Errorf("delete inbox item %d: %w", id, err)
		}
	}
	return nil
}

func outboxTurnKey(turnID string, id uint64) []byte {
	k := make([]byte, 0, len(turnID)+9)
	k = append(k, turnID...)
	k = append(k, 0)
	return append(k, u64(id)...)
}

// OutboxIntent records that chunk r.Chunk of turn r.TurnID is about to be sent
// to r.Target and returns its ID. Status defaults to pending; Created and
// Updated are set from the store clock.
func (s *Store) OutboxIntent(ctx context.Context, r memory.OutboxRecord) (uint64, error) {
	r, err := memory.PrepareIntent(r, s.now())
	if err != nil {
		return 0, err
	}
	var id uint64
	err = s.batch(ctx, "outbox intent for "+r.Target, func(tx *bbolt.Tx) error {
		var err error
		a := newArena(256 + len(r.Text))
		id, err = putIntentTx(tx, &a, r)
		return err
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// putIntentTx stores a prepared intent inside tx and returns its id.
func putIntentTx(tx *bbolt.Tx, a *txArena, r memory.OutboxRecord) (uint64, error) {
	ob := tx.Bucket(bOutbox)
	seq, err := ob.NextSequence()
	if err != nil {
		return 0, fmt.Errorf("outbox sequence: %w", err)
	}
	r.ID = seq
	if err := a.put(ob, seq, func(b []byte) ([]byte, error) { return appendOutboxRecord(b, &r) }); err != nil {
		return 0, err
	}
	m := a.mark()
	a.b = append(append(a.b, r.TurnID...), 0)
	a.b = binary.BigEndian.AppendUint64(a.b, seq)
	if err := tx.Bucket(bOutboxTurn).Put(a.since(m), nil); err != nil {
		return 0, fmt.Errorf("outbox index: %w", err)
	}
	return seq, nil
}

// OutboxResult records the outcome of the send of outbox record id. An unknown
// id yields an error wrapping ErrNotFound.
func (s *Store) OutboxResult(ctx context.Context, id uint64, status, platformID, errText string) error {
	op := fmt.Sprintf("outbox result %d", id)
	if !memory.ValidOutboxStatus(status) {
		return fmt.Errorf("memory: %s: invalid status %q", op, status)
	}
	now := s.now()
	// Checked first: a Batch function that fails is re-run alone, which is
	// correct but wastes the shared commit.
	var exists bool
	if err := s.view(ctx, op, func(tx *bbolt.Tx) error {
		exists = tx.Bucket(bOutbox).Get(u64(id)) != nil
		return nil
	}); err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("memory: %s: %w", op, memory.ErrNotFound)
	}
	return s.batch(ctx, op, func(tx *bbolt.Tx) error {
		a := newArena(256)
		return receiptTx(tx, &a, memory.Receipt{ID: id, Status: status, PlatformID: platformID, Error: errText}, now)
	})
}

// receiptTx completes outbox record r.ID inside tx; an unknown id is ErrNotFound.
func receiptTx(tx *bbolt.Tx, a *txArena, r memory.Receipt, now time.Time) error {
	ob := tx.Bucket(bOutbox)
	k := a.key(r.ID)
	if old := ob.Get(k); old != nil {
		m := a.mark()
		var ok bool
		if a.b, ok = appendReceipt(a.b, old, r.Status, r.PlatformID, r.Error, now); ok {
			return ob.Put(k, a.since(m))
		}
	}
	var rec memory.OutboxRecord
	found, err := getJSON(ob, u64(r.ID), &rec)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("outbox record %d: %w", r.ID, memory.ErrNotFound) // pruned in between
	}
	rec.Status, rec.PlatformID, rec.Error, rec.Updated = r.Status, r.PlatformID, r.Error, now
	return putJSON(ob, u64(r.ID), rec)
}

// OutboxForTurn returns the outbox records of a turn ordered by ID.
func (s *Store) OutboxForTurn(ctx context.Context, turnID string) ([]memory.OutboxRecord, error) {
	var out []memory.OutboxRecord
	err := s.view(ctx, "outbox of turn "+turnID, func(tx *bbolt.Tx) error {
		ob := tx.Bucket(bOutbox)
		prefix := append([]byte(turnID), 0)
		c := tx.Bucket(bOutboxTurn).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if len(k) != len(prefix)+8 {
				continue // a longer turn id that happens to share the prefix
			}
			var rec memory.OutboxRecord
			found, err := getJSON(ob, k[len(prefix):], &rec)
			if err != nil {
				return err
			}
			if found {
				out = append(out, rec)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// OutboxPending returns the records still in state pending (send intents
// without a receipt), ordered by ID: what a restart must reconcile.
func (s *Store) OutboxPending(ctx context.Context) ([]memory.OutboxRecord, error) {
	var out []memory.OutboxRecord
	err := s.view(ctx, "list pending outbox", func(tx *bbolt.Tx) error {
		return tx.Bucket(bOutbox).ForEach(func(k, v []byte) error {
			var rec memory.OutboxRecord
			if err := decodeRecord(v, &rec); err != nil {
				return fmt.Errorf("decode outbox record %d: %w", fromU64(k), err)
			}
			if rec.Status == memory.OutboxPending {
				out = append(out, rec)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
