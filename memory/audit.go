package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// AuditRecord is one entry of the audit log (turn traces, admin commands,
// config edits).
type AuditRecord struct {
	ID      uint64    `json:"id"`
	Time    time.Time `json:"time"`
	Actor   string    `json:"actor"`
	Action  string    `json:"action"`
	Session string    `json:"session,omitempty"`
	Detail  string    `json:"detail,omitempty"`
	Error   string    `json:"error,omitempty"`
}

// AuditFilter selects audit records; zero fields do not filter.
type AuditFilter struct {
	Session string    // only records of this session
	Since   time.Time // only records at or after this time
	Limit   int       // at most this many (<= 0: all)
}

// Audit appends rec (ID assigned; Time defaults to now). Concurrent calls share
// a commit.
func (s *Store) Audit(ctx context.Context, rec AuditRecord) error {
	if rec.Time.IsZero() {
		rec.Time = s.now()
	}
	return s.batch(ctx, "audit "+rec.Action, func(tx *bolt.Tx) error {
		b := tx.Bucket(bAudit)
		seq, err := b.NextSequence()
		if err != nil {
			return fmt.Errorf("audit sequence: %w", err)
		}
		r := rec
		r.ID = seq
		return putJSON(b, u64(seq), r)
	})
}

// ListAudit returns the records matching f, newest first.
func (s *Store) ListAudit(ctx context.Context, f AuditFilter) ([]AuditRecord, error) {
	out := []AuditRecord{}
	err := s.view(ctx, "list audit", func(tx *bolt.Tx) error {
		c := tx.Bucket(bAudit).Cursor()
		n := 0
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			if n++; n%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			var r AuditRecord
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
	err := s.view(ctx, "kv get", func(tx *bolt.Tx) error {
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
	return s.update(ctx, "kv put", func(tx *bolt.Tx) error {
		return tx.Bucket(bKV).Put([]byte(key), v)
	})
}

// KVDelete removes key; deleting a missing key is not an error.
func (s *Store) KVDelete(ctx context.Context, key string) error {
	return s.update(ctx, "kv delete", func(tx *bolt.Tx) error {
		return tx.Bucket(bKV).Delete([]byte(key))
	})
}
