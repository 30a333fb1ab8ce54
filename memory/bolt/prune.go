package bolt

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboard-bot/switchboard/memory"

	bbolt "go.etcd.io/bbolt"
)

// Prune applies the retention settings: expired dedup records, audit records
// older than AuditMaxAge or beyond the newest AuditMaxRecords, runs beyond the
// newest RunsPerJob of each job, and outbox records created more than
// OutboxMaxAge ago. It runs in one write transaction.
func (s *Store) Prune(ctx context.Context) error {
	_, err := s.PruneCounts(ctx)
	return err
}

// PruneCounts is Prune, also reporting how many records each rule removed.
func (s *Store) PruneCounts(ctx context.Context) (memory.PruneResult, error) {
	var res memory.PruneResult
	now := s.now()
	err := s.update(ctx, "prune", func(tx *bbolt.Tx) error {
		res = memory.PruneResult{}
		var err error
		if res.Dedup, err = pruneDedup(tx, now.UnixNano()); err != nil {
			return fmt.Errorf("dedup: %w", err)
		}
		if res.Audit, err = pruneAudit(ctx, tx, now.Add(-s.opts.AuditMaxAge).UnixNano(), s.opts.AuditMaxRecords); err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		if res.Runs, err = pruneRuns(tx, s.opts.RunsPerJob); err != nil {
			return fmt.Errorf("runs: %w", err)
		}
		if res.Outbox, err = pruneOutbox(ctx, tx, now.Add(-s.opts.OutboxMaxAge).UnixNano()); err != nil {
			return fmt.Errorf("outbox: %w", err)
		}
		return nil
	})
	if err != nil {
		return memory.PruneResult{}, err
	}
	s.log.Info("memory pruned", "dedup", res.Dedup, "audit", res.Audit, "runs", res.Runs, "outbox", res.Outbox)
	return res, nil
}

// pruneDedup removes dedup records whose expiry is at or before now, reading
// only the expired prefix of the expiry index.
func pruneDedup(tx *bbolt.Tx, now int64) (int, error) {
	dedup, exp := tx.Bucket(bDedup), tx.Bucket(bDedupExp)
	var idx [][]byte
	c := exp.Cursor()
	for k, _ := c.First(); len(k) >= 8 && int64(fromU64(k[:8])) <= now; k, _ = c.Next() {
		idx = append(idx, append([]byte{}, k...))
	}
	for _, k := range idx {
		dk := k[8:]
		// Only drop the record if it still carries this expiry (a re-accepted
		// message has a newer one).
		if v := dedup.Get(dk); v != nil && fromU64(v) == fromU64(k[:8]) {
			if err := dedup.Delete(dk); err != nil {
				return 0, err
			}
		}
		if err := exp.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(idx), nil
}

func pruneAudit(ctx context.Context, tx *bbolt.Tx, cutoff int64, maxRecords int) (int, error) {
	b := tx.Bucket(bAudit)
	type entry struct {
		key []byte
		old bool
	}
	var all []entry
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(all)%4096 == 4095 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		var r struct {
			Time time.Time `json:"time"`
		}
		if err := json.Unmarshal(v, &r); err != nil {
			return 0, fmt.Errorf("decode audit record %d: %w", fromU64(k), err)
		}
		all = append(all, entry{key: append([]byte{}, k...), old: r.Time.UnixNano() < cutoff})
	}
	excess := len(all) - maxRecords
	n := 0
	for i, e := range all {
		if i < excess || e.old {
			if err := b.Delete(e.key); err != nil {
				return 0, err
			}
			n++
		}
	}
	return n, nil
}

func pruneRuns(tx *bbolt.Tx, keep int) (int, error) {
	root := tx.Bucket(bRuns)
	var jobs [][]byte
	if err := root.ForEachBucket(func(k []byte) error {
		jobs = append(jobs, append([]byte{}, k...))
		return nil
	}); err != nil {
		return 0, err
	}
	n := 0
	for _, job := range jobs {
		b := root.Bucket(job)
		var keys [][]byte
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			keys = append(keys, append([]byte{}, k...))
		}
		for i := 0; i < len(keys)-keep; i++ {
			if err := b.Delete(keys[i]); err != nil {
				return 0, err
			}
			n++
		}
	}
	return n, nil
}

func pruneOutbox(ctx context.Context, tx *bbolt.Tx, cutoff int64) (int, error) {
	ob, idx := tx.Bucket(bOutbox), tx.Bucket(bOutboxTurn)
	var old []memory.OutboxRecord
	c := ob.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var r memory.OutboxRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return 0, fmt.Errorf("decode outbox record %d: %w", fromU64(k), err)
		}
		if r.Created.UnixNano() < cutoff {
			old = append(old, r)
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	for _, r := range old {
		if err := ob.Delete(u64(r.ID)); err != nil {
			return 0, err
		}
		if err := idx.Delete(outboxTurnKey(r.TurnID, r.ID)); err != nil {
			return 0, err
		}
	}
	return len(old), nil
}
