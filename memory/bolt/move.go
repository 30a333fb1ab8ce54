package bolt

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/switchboard-bot/switchboard/memory"

	bbolt "go.etcd.io/bbolt"
)

// MoveSession renames a session (its messages, turns, archives, notes and
// workspace files) from one key to another in one transaction — for a
// Telegram group upgraded to a supergroup, whose chat id changes. It fails if
// the new key already has a session (or files); moving a session that does
// not exist is a no-op.
func (s *Store) MoveSession(ctx context.Context, from, to string) error {
	if from == to {
		return nil
	}
	return s.update(ctx, "move session", func(tx *bbolt.Tx) error {
		for _, top := range [][]byte{bSessions, bArchives, bNotes, bWorkspace} {
			parent := tx.Bucket(top)
			if parent == nil {
				continue // no chat has files yet (workspace.go)
			}
			src := parent.Bucket([]byte(from))
			if src == nil {
				continue
			}
			if parent.Bucket([]byte(to)) != nil {
				return fmt.Errorf("%s %q already exists", top, to)
			}
			dst, err := parent.CreateBucket([]byte(to))
			if err != nil {
				return err
			}
			if err := copyBucket(src, dst); err != nil {
				return err
			}
			if err := parent.DeleteBucket([]byte(from)); err != nil {
				return err
			}
		}
		sess := tx.Bucket(bSessions).Bucket([]byte(to))
		if sess == nil {
			return nil
		}
		raw := sess.Get(kSessMeta)
		if raw == nil {
			return nil
		}
		var meta memory.SessionMeta
		if err := json.Unmarshal(raw, &meta); err != nil {
			return fmt.Errorf("decode session meta: %w", err)
		}
		meta.Key = to
		out, err := json.Marshal(meta)
		if err != nil {
			return err
		}
		return sess.Put(kSessMeta, out)
	})
}

// copyBucket copies every key and nested bucket of src into dst, keeping the
// sequence so new records continue after the copied ones.
func copyBucket(src, dst *bbolt.Bucket) error {
	if err := dst.SetSequence(src.Sequence()); err != nil {
		return err
	}
	return src.ForEach(func(k, v []byte) error {
		if v != nil {
			return dst.Put(k, v)
		}
		child, err := dst.CreateBucket(k)
		if err != nil {
			return err
		}
		return copyBucket(src.Bucket(k), child)
	})
}
