package bolt

import (
	"context"
	"fmt"

	"github.com/switchboard-bot/switchboard/memory"

	bbolt "go.etcd.io/bbolt"
)

// ReadTurn reads a turn's history, session counters and notes in one read
// transaction (memory.TurnReader).
func (s *Store) ReadTurn(ctx context.Context, key string, limit int) (memory.TurnView, error) {
	var v memory.TurnView
	err := s.viewOp(ctx, func() string { return "read turn context of " + key }, func(tx *bbolt.Tx) error {
		v = memory.TurnView{}
		// The session's bucket is looked up once: in a read transaction
		// bolt caches no bucket, so each lookup is a search from the root.
		sb := tx.Bucket(bSessions).Bucket([]byte(key))
		var err error
		if sb != nil {
			if v.History, err = sessionHistory(sb, limit); err != nil {
				return err
			}
			if v.Found, err = getJSON(sb, kSessMeta, &v.Meta); err != nil {
				return err
			}
		}
		v.Notes, err = notesTx(tx, key, func(memory.Note) bool { return true })
		return err
	})
	if err != nil {
		return memory.TurnView{}, err
	}
	v.History = memory.SanitizeHistory(v.History)
	return v, nil
}

// loadHistoryTx is LoadHistory inside tx, before sanitizing.
func loadHistoryTx(tx *bbolt.Tx, key string, limit int) ([]memory.Message, error) {
	sb := tx.Bucket(bSessions).Bucket([]byte(key))
	if sb == nil {
		return nil, nil
	}
	return sessionHistory(sb, limit)
}

// sessionHistory is loadHistoryTx for the session's bucket sb.
func sessionHistory(sb *bbolt.Bucket, limit int) ([]memory.Message, error) {
	msgs := sb.Bucket(bMsgs)
	if msgs == nil {
		return nil, nil
	}
	var rev []storedMessage // newest first
	c := msgs.Cursor()
	for k, v := c.Last(); k != nil; k, v = c.Prev() {
		var sm storedMessage
		if err := decodeRecord(v, &sm); err != nil {
			return nil, fmt.Errorf("decode message %d: %w", fromU64(k), err)
		}
		rev = append(rev, sm)
		if limit > 0 && len(rev) == limit+1 {
			break
		}
	}
	window := make([]storedMessage, 0, len(rev))
	for i := len(rev) - 1; i >= 0; i-- {
		window = append(window, rev[i])
	}
	if limit > 0 && len(window) == limit+1 {
		// window[0] is the message just before the window: drop messages
		// that belong to its turn.
		before := window[0].Turn
		window = window[1:]
		for len(window) > 0 && window[0].Turn == before {
			window = window[1:]
		}
		if len(window) == 0 {
			return condensedLastTurn(sb, limit)
		}
	}
	out := make([]memory.Message, len(window))
	for i, sm := range window {
		out[i] = sm.M
	}
	return out, nil
}
