package bolt

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/switchboard-bot/switchboard/memory"

	bbolt "go.etcd.io/bbolt"
)

// Audit appends rec (ID assigned; Time defaults to now). Concurrent calls share
// a commit.
func (s *Store) Audit(ctx context.Context, rec memory.AuditRecord) error {
	if rec.Time.IsZero() {
		rec.Time = s.now()
	}
	return s.batch(ctx, "audit "+rec.Action, func(tx *bbolt.Tx) error {
		a := newArena(256 + len(rec.Detail))
		return auditTx(tx, &a, rec)
	})
}

// auditTx appends rec inside tx.
func auditTx(tx *bbolt.Tx, a *txArena, rec memory.AuditRecord) error {
	b := tx.Bucket(bAudit)
	seq, err := b.NextSequence()
	if err != nil {
		return fmt.Errorf("audit sequence: %w", err)
	}
	rec.ID = seq
	return a.put(b, seq, func(buf []byte) ([]byte, error) { return appendAuditRecord(buf, &rec) })
}

// ListAudit returns the records matching f, newest first.
func (s *Store) ListAudit(ctx context.Context, f memory.AuditFilter) ([]memory.AuditRecord, error) {
	out := []memory.AuditRecord{}
	err := s.view(ctx, "list audit", func(tx *bbolt.Tx) error {
		c := tx.Bucket(bAudit).Cursor()
		n := 0
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			if n++; n%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			var r memory.AuditRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode audit record %d: %w", fromU64(k), err)
			}
			if !f.Since.IsZero() && r.Time.Before(f.Since) {
				// Records are appended in time order; clocks may step back a
				// little, so keep scanning rather than stop here.
				continue
			}
			if f.Session != "" && r.Session != f.Session {
				continue
			}
			out = append(out, r)
			if f.Limit > 0 && len(out) == f.Limit {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// KVGet returns the value stored under key; found is false if there is none.
func (s *Store) KVGet(ctx context.Context, key string) ([]byte, bool, error) {
	var val []byte
	var found bool
	err := s.view(ctx, "kv get", func(tx *bbolt.Tx) error {
		v := tx.Bucket(bKV).Get([]byte(key))
		if v != nil {
			found = true
			val = append([]byte{}, v...)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return val, found, nil
}

// KVPut stores val under key (replacing any value).
func (s *Store) KVPut(ctx context.Context, key string, val []byte) error {
	if key == "" {
		return fmt.Errorf("memory: kv put: empty key")
	}
	v := append([]byte{}, val...)
	return s.update(ctx, "kv put", func(tx *bbolt.Tx) error {
		return tx.Bucket(bKV).Put([]byte(key), v)
	})
}

// KVDelete removes key; deleting a missing key is not an error.
func (s *Store) KVDelete(ctx context.Context, key string) error {
	return s.update(ctx, "kv delete", func(tx *bbolt.Tx) error {
		return tx.Bucket(bKV).Delete([]byte(key))
	})
}
