package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-bot/switchboard/memory"
)

// Audit appends rec (ID assigned; Time defaults to now).
func (s *Store) Audit(ctx context.Context, rec memory.AuditRecord) error {
	if rec.Time.IsZero() {
		rec.Time = s.now()
	}
	return s.tx(ctx, "audit "+rec.Action, func(tx pgx.Tx) error { return auditTx(ctx, tx, rec) })
}

// auditTx appends rec inside tx.
func auditTx(ctx context.Context, tx pgx.Tx, r memory.AuditRecord) error {
	_, err := tx.Exec(ctx, `INSERT INTO audit (time, actor, action, session, detail, error) VALUES ($1, $2, $3, $4, $5, $6)`,
		r.Time, clean(r.Actor), clean(r.Action), r.Session, clean(r.Detail), clean(r.Error))
	if err != nil {
		return fmt.Errorf("write audit record: %w", err)
	}
	return nil
}

// ListAudit returns the records matching f, newest (highest id) first.
func (s *Store) ListAudit(ctx context.Context, f memory.AuditFilter) ([]memory.AuditRecord, error) {
	const op = "list audit"
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT id, time, actor, action, session, detail, error FROM audit
		WHERE ($1 = '' OR session = $1) AND ($2::timestamptz IS NULL OR time >= $2)
		ORDER BY id DESC LIMIT NULLIF($3::bigint, 0)`, f.Session, nullTime(f.Since), max(f.Limit, 0))
	if err != nil {
		return nil, s.wrap(op, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.AuditRecord, error) {
		var rec memory.AuditRecord
		var id int64
		err := r.Scan(&id, &rec.Time, &rec.Actor, &rec.Action, &rec.Session, &rec.Detail, &rec.Error)
		rec.ID, rec.Time = uint64(id), rec.Time.UTC()
		return rec, err
	})
	if err != nil {
		return nil, s.wrap(op, err)
	}
	if out == nil {
		out = []memory.AuditRecord{}
	}
	return out, nil
}

// KVGet returns the value stored under key; found is false if there is none.
func (s *Store) KVGet(ctx context.Context, key string) ([]byte, bool, error) {
	const op = "kv get"
	if err := s.begin(ctx, op); err != nil {
		return nil, false, err
	}
	var val []byte
	err := s.pool.QueryRow(ctx, `SELECT value FROM kv WHERE key = $1`, key).Scan(&val)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.wrap(op, err)
	}
	if val == nil {
		val = []byte{}
	}
	return val, true, nil
}

// KVPut stores val under key (replacing any value).
func (s *Store) KVPut(ctx context.Context, key string, val []byte) error {
	if key == "" {
		return fmt.Errorf("memory: kv put: empty key")
	}
	const op = "kv put"
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	if val == nil {
		val = []byte{}
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO kv (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, key, val)
	return s.wrap(op, err)
}

// KVDelete removes key; deleting a missing key is not an error.
func (s *Store) KVDelete(ctx context.Context, key string) error {
	const op = "kv delete"
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `DELETE FROM kv WHERE key = $1`, key)
	return s.wrap(op, err)
}
