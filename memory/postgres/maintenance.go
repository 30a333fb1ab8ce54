package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-bot/switchboard/internal/redact"
	"github.com/switchboard-bot/switchboard/memory"
)

// Prune applies the retention settings: expired dedup records, audit
// records older than AuditMaxAge or beyond the newest AuditMaxRecords, runs
// beyond the newest RunsPerJob of each job, and outbox records created more
// than OutboxMaxAge ago. It runs in one transaction.
func (s *Store) Prune(ctx context.Context) error {
	_, err := s.PruneCounts(ctx)
	return err
}

// PruneCounts is Prune, also reporting how many records each rule removed.
func (s *Store) PruneCounts(ctx context.Context) (memory.PruneResult, error) {
	var res memory.PruneResult
	now := s.now()
	err := s.tx(ctx, "prune", func(tx pgx.Tx) error {
		res = memory.PruneResult{}
		steps := []struct {
			name string
			n    *int
			sql  string
			args []any
		}{
			{"dedup", &res.Dedup, `DELETE FROM dedup WHERE expires <= $1`, []any{now}},
			{"audit", &res.Audit, `DELETE FROM audit WHERE time < $1
				OR id <= (SELECT id FROM audit ORDER BY id DESC OFFSET $2 LIMIT 1)`,
				[]any{now.Add(-s.opts.AuditMaxAge), s.opts.AuditMaxRecords}},
			{"runs", &res.Runs, `DELETE FROM runs WHERE id IN (SELECT id FROM
				(SELECT id, row_number() OVER (PARTITION BY job ORDER BY id DESC) AS rn FROM runs) r WHERE rn > $1)`,
				[]any{s.opts.RunsPerJob}},
			{"outbox", &res.Outbox, `DELETE FROM outbox WHERE created < $1`, []any{now.Add(-s.opts.OutboxMaxAge)}},
		}
		for _, st := range steps {
			tag, err := tx.Exec(ctx, st.sql, st.args...)
			if err != nil {
				return fmt.Errorf("%s: %w", st.name, err)
			}
			*st.n = int(tag.RowsAffected())
		}
		return nil
	})
	if err != nil {
		return memory.PruneResult{}, err
	}
	s.log.Info("memory pruned", "dedup", res.Dedup, "audit", res.Audit, "runs", res.Runs, "outbox", res.Outbox)
	return res, nil
}

// Stats counts records from one snapshot; FileSize is the database's size
// on disk (pg_database_size).
func (s *Store) Stats(ctx context.Context) (memory.Stats, error) {
	const op = "stats"
	if err := s.begin(ctx, op); err != nil {
		return memory.Stats{}, err
	}
	st := memory.Stats{Path: s.path}
	err := s.pool.QueryRow(ctx, `SELECT
			pg_database_size(current_database()),
			(SELECT count(*) FROM sessions), (SELECT coalesce(sum(messages), 0) FROM sessions),
			(SELECT count(*) FROM archives), (SELECT count(*) FROM notes), (SELECT count(*) FROM dedup),
			(SELECT count(*) FILTER (WHERE state = 'pending') FROM inbox),
			(SELECT count(*) FILTER (WHERE state = 'answered') FROM inbox),
			(SELECT count(*) FILTER (WHERE status = 'pending') FROM outbox), (SELECT count(*) FROM outbox),
			(SELECT count(*) FROM jobs), (SELECT count(*) FROM runs), (SELECT count(*) FROM audit), (SELECT count(*) FROM kv)`).
		Scan(&st.FileSize, &st.Sessions, &st.Messages, &st.Archives, &st.Notes, &st.DedupRecords,
			&st.InboxPending, &st.InboxAnswered, &st.OutboxPending, &st.OutboxTotal, &st.Jobs, &st.Runs, &st.Audit, &st.KV)
	if err != nil {
		return memory.Stats{}, s.wrap(op, err)
	}
	return st, nil
}

// consistencyChecks are queries that return one text row per problem.
var consistencyChecks = []string{
	`SELECT format('session %s counts %s turns and %s messages, its live turns hold %s and %s', s.key, s.turns, s.messages,
			count(t.id), coalesce(sum(t.n_messages), 0))
		FROM sessions s LEFT JOIN turns t ON t.session_id = s.id AND t.archive_id IS NULL
		GROUP BY s.id HAVING s.turns <> count(t.id) OR s.messages <> coalesce(sum(t.n_messages), 0) LIMIT 10`,
	`SELECT format('turn %s (%s) says %s messages and holds %s', t.id, t.turn_id, t.n_messages, json_array_length(t.messages))
		FROM turns t WHERE json_typeof(t.messages) <> 'array' OR json_array_length(t.messages) <> t.n_messages LIMIT 10`,
	`SELECT format('turn %s (%s) is in archive %s of another session', t.id, t.turn_id, a.name)
		FROM turns t JOIN archives a ON a.id = t.archive_id WHERE a.session_id <> t.session_id LIMIT 10`,
	`SELECT format('session %s numbers %s archives but has %s', s.key, s.archive_seq, count(a.id))
		FROM sessions s LEFT JOIN archives a ON a.session_id = s.id GROUP BY s.id HAVING count(a.id) > s.archive_seq LIMIT 10`,
}

// Check verifies the schema version (the one this binary migrates to, not
// left dirty by a failed migration) and the consistency of sessions, turns
// and archives, for `doctor`. It returns nil when all is well, else an error
// wrapping ErrInvalidDatabase that lists the problems.
func (s *Store) Check() error {
	const op = "check"
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	var problems []string
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		latest, err := SchemaVersion()
		if err != nil {
			return err
		}
		v, dirty, found, err := readVersion(ctx, tx)
		switch {
		case err != nil:
			return err
		case !found:
			problems = append(problems, "no schema version recorded (schema_migrations is missing or empty)")
		case dirty:
			problems = append(problems, fmt.Sprintf("schema version %d is dirty: a migration failed half-way", v))
		case v != latest:
			problems = append(problems, fmt.Sprintf("schema version %d, this switchboard expects %d", v, latest))
		}
		if !found {
			return nil
		}
		for _, q := range consistencyChecks {
			rows, err := tx.Query(ctx, q)
			if err != nil {
				return err
			}
			found, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			problems = append(problems, found...)
		}
		return nil
	})
	if err != nil {
		var pe interface{ SQLState() string }
		if errors.As(err, &pe) && pe.SQLState() == "42P01" { // undefined_table
			return fmt.Errorf("memory: check %s: %w: %w", s.path, memory.ErrInvalidDatabase, redact.Error(err, s.secrets...))
		}
		return s.wrap(op, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("memory: check %s: %w: %s", s.path, memory.ErrInvalidDatabase, strings.Join(problems, "; "))
	}
	return nil
}
