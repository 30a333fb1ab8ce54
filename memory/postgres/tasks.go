package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-bot/switchboard/memory"
)

// Background tasks (memory.Tasks) live in the table tasks
// (migrations/0004_tasks.up.sql): the record whole in rec, chat, state and
// delivered beside it for the queries. Each change is one transaction that
// reads the row FOR UPDATE, decides on the record as it is (the same rules
// as bolt: memory.ClaimableTask, memory.DeliverableTask) and writes it
// back, so two replicas never both claim, finish or deliver one task.
// CreateTask and ClaimTask first take a transaction-scoped advisory lock, so
// the per-chat limit and MaxRunning are counted by one writer at a time.

var _ memory.Tasks = (*Store)(nil)

// tasksLock is the advisory lock key of task creation and claims.
const tasksLock = 0x5357_7461_736b // "SWtask"

func taskID(id string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimPrefix(id, "t"), 10, 64)
	return n, err == nil && strings.HasPrefix(id, "t") && n > 0
}

func decodeTask(raw []byte) (memory.TaskRecord, error) {
	var t memory.TaskRecord
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, fmt.Errorf("decode task: %w", err)
	}
	return t, nil
}

func writeTask(ctx context.Context, tx pgx.Tx, n int64, t memory.TaskRecord) error {
	raw, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("encode task %s: %w", t.ID, err)
	}
	_, err = tx.Exec(ctx, `UPDATE tasks SET state = $2, delivered = $3, rec = $4 WHERE id = $1`,
		n, t.State, t.Delivered, string(raw))
	return err
}

// CreateTask stores t as a new queued task (memory.Tasks).
func (s *Store) CreateTask(ctx context.Context, t memory.TaskRecord, maxPerChat int, now time.Time) (memory.TaskRecord, error) {
	if t.Chat == "" || strings.TrimSpace(t.Prompt) == "" {
		return memory.TaskRecord{}, fmt.Errorf("memory: create task: a task needs a chat and a prompt")
	}
	var out memory.TaskRecord
	err := s.tx(ctx, "create task", func(tx pgx.Tx) error {
		out = memory.TaskRecord{}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(tasksLock)); err != nil {
			return err
		}
		if t.Key != "" {
			var raw []byte
			err := tx.QueryRow(ctx, `SELECT rec::text FROM tasks WHERE rec->>'key' = $1 LIMIT 1`, clean(t.Key)).Scan(&raw)
			if err == nil {
				out, err = decodeTask(raw)
				return err
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		if maxPerChat > 0 {
			var active int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE chat = $1 AND state IN ('queued', 'running')`,
				clean(t.Chat)).Scan(&active); err != nil {
				return err
			}
			if active >= maxPerChat {
				return fmt.Errorf("%w (%d running or queued, the limit is %d)", memory.ErrTaskLimit, active, maxPerChat)
			}
		}
		var n int64
		if err := tx.QueryRow(ctx, `INSERT INTO tasks (chat, state, rec) VALUES ($1, $2, '{}') RETURNING id`,
			clean(t.Chat), memory.TaskQueued).Scan(&n); err != nil {
			return err
		}
		rec := t
		rec.Chat, rec.Title, rec.Prompt, rec.Persona = clean(t.Chat), clean(t.Title), clean(t.Prompt), clean(t.Persona)
		rec.ID = "t" + strconv.FormatInt(n, 10)
		rec.State, rec.Owner, rec.Lease, rec.Attempts = memory.TaskQueued, "", time.Time{}, 0
		rec.Created, rec.Started, rec.Ended = now, time.Time{}, time.Time{}
		rec.Result, rec.Error, rec.Delivered = "", "", false
		out = rec
		return writeTask(ctx, tx, n, rec)
	})
	if err != nil {
		return memory.TaskRecord{}, err
	}
	return out, nil
}

// GetTask returns task id (memory.Tasks).
func (s *Store) GetTask(ctx context.Context, id string) (memory.TaskRecord, error) {
	op := "get task " + id
	n, ok := taskID(id)
	if !ok {
		return memory.TaskRecord{}, fmt.Errorf("memory: %s: %w", op, memory.ErrNotFound)
	}
	if err := s.begin(ctx, op); err != nil {
		return memory.TaskRecord{}, err
	}
	var raw []byte
	err := s.pool.QueryRow(ctx, `SELECT rec::text FROM tasks WHERE id = $1`, n).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.TaskRecord{}, fmt.Errorf("memory: %s: %w", op, memory.ErrNotFound)
	}
	if err != nil {
		return memory.TaskRecord{}, s.wrap(op, err)
	}
	t, err := decodeTask(raw)
	return t, s.wrap(op, err)
}

func (s *Store) queryTasks(ctx context.Context, op, sql string, args ...any) ([]memory.TaskRecord, error) {
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.TaskRecord, error) {
		var raw []byte
		if err := r.Scan(&raw); err != nil {
			return memory.TaskRecord{}, err
		}
		return decodeTask(raw)
	})
	return out, s.wrap(op, err)
}

// ListTasks returns the tasks f selects, newest first (memory.Tasks).
func (s *Store) ListTasks(ctx context.Context, f memory.TaskFilter) ([]memory.TaskRecord, error) {
	limit := int64(f.Limit)
	if limit <= 0 {
		limit = -1
	}
	return s.queryTasks(ctx, "list tasks", `SELECT rec::text FROM tasks
		WHERE ($1 = '' OR chat = $1) AND (NOT $2 OR state IN ('queued', 'running'))
		ORDER BY id DESC LIMIT CASE WHEN $3 < 0 THEN NULL ELSE $3 END`, clean(f.Chat), f.Active, limit)
}

// CountTasks counts the active tasks (memory.Tasks).
func (s *Store) CountTasks(ctx context.Context) (memory.TaskCounts, error) {
	const op = "count tasks"
	if err := s.begin(ctx, op); err != nil {
		return memory.TaskCounts{}, err
	}
	var n memory.TaskCounts
	err := s.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'queued'), count(*) FILTER (WHERE state = 'running')
		FROM tasks WHERE state IN ('queued', 'running')`).Scan(&n.Queued, &n.Running)
	return n, s.wrap(op, err)
}

// ClaimTask claims a queued task or one whose lease expired (memory.Tasks).
func (s *Store) ClaimTask(ctx context.Context, c memory.TaskClaim) (memory.TaskRecord, bool, error) {
	return s.claimTask(ctx, "claim task", c, c.MaxRunning, `state IN ('queued', 'running')`, memory.ClaimableTask,
		func(t *memory.TaskRecord) {
			t.State, t.Attempts, t.Started, t.Error = memory.TaskRunning, t.Attempts+1, c.Now, ""
		})
}

// ClaimTaskDelivery claims a finished, undelivered task whose lease expired
// (memory.Tasks).
func (s *Store) ClaimTaskDelivery(ctx context.Context, c memory.TaskClaim) (memory.TaskRecord, bool, error) {
	return s.claimTask(ctx, "claim task delivery", c, 0, `state IN ('done', 'failed') AND NOT delivered`, memory.DeliverableTask,
		func(*memory.TaskRecord) {})
}

func (s *Store) claimTask(ctx context.Context, op string, c memory.TaskClaim, limit int, where string,
	claimable func(memory.TaskRecord, memory.TaskClaim) bool, apply func(*memory.TaskRecord)) (memory.TaskRecord, bool, error) {
	if c.Owner == "" {
		return memory.TaskRecord{}, false, fmt.Errorf("memory: %s: empty owner", op)
	}
	var out memory.TaskRecord
	var ok bool
	err := s.tx(ctx, op, func(tx pgx.Tx) error {
		out, ok = memory.TaskRecord{}, false
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(tasksLock)); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id, state, rec::text FROM tasks WHERE `+where+` OR state = 'running' ORDER BY id`)
		if err != nil {
			return err
		}
		type row struct {
			n int64
			t memory.TaskRecord
		}
		all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			var state string
			var raw []byte
			if err := r.Scan(&x.n, &state, &raw); err != nil {
				return x, err
			}
			x.t, err = decodeTask(raw)
			return x, err
		})
		if err != nil {
			return err
		}
		live, pick := 0, -1
		for i, x := range all {
			if x.t.State == memory.TaskRunning && !memory.ClaimableTask(x.t, c) {
				live++
			}
			if pick < 0 && claimable(x.t, c) {
				pick = i
			}
		}
		if pick < 0 || (limit > 0 && live >= limit) {
			return nil
		}
		t := all[pick].t
		t.Owner, t.Lease = c.Owner, c.Now.Add(c.TTL)
		apply(&t)
		if err := writeTask(ctx, tx, all[pick].n, t); err != nil {
			return err
		}
		out, ok = t, true
		return nil
	})
	if err != nil || !ok {
		return memory.TaskRecord{}, false, err
	}
	return out, true, nil
}

// held runs fn on task id when owner holds it in one of states; otherwise
// ErrTaskLost (ErrNotFound for an unknown id) and nothing is written.
func (s *Store) held(ctx context.Context, op, id, owner string, states []string, fn func(*memory.TaskRecord)) error {
	n, ok := taskID(id)
	if !ok {
		return fmt.Errorf("memory: %s %q: %w", op, id, memory.ErrNotFound)
	}
	return s.tx(ctx, op+" "+id, func(tx pgx.Tx) error {
		var raw []byte
		err := tx.QueryRow(ctx, `SELECT rec::text FROM tasks WHERE id = $1 FOR UPDATE`, n).Scan(&raw)
		if errors.Is(err, pgx.ErrNoRows) {
			return memory.ErrNotFound
		}
		if err != nil {
			return err
		}
		t, err := decodeTask(raw)
		if err != nil {
			return err
		}
		match := false
		for _, st := range states {
			match = match || t.State == st
		}
		if !match || t.Owner != owner {
			return fmt.Errorf("%w (state %s)", memory.ErrTaskLost, t.State)
		}
		fn(&t)
		return writeTask(ctx, tx, n, t)
	})
}

// RenewTask extends owner's lease of a running task (memory.Tasks).
func (s *Store) RenewTask(ctx context.Context, id, owner string, until time.Time) error {
	return s.held(ctx, "renew task", id, owner, []string{memory.TaskRunning}, func(t *memory.TaskRecord) {
		t.Lease = until
	})
}

// ReleaseTask gives owner's running task back to the queue (memory.Tasks).
func (s *Store) ReleaseTask(ctx context.Context, id, owner string) error {
	return s.held(ctx, "release task", id, owner, []string{memory.TaskRunning}, func(t *memory.TaskRecord) {
		t.State, t.Owner, t.Lease, t.Started = memory.TaskQueued, "", time.Time{}, time.Time{}
		if t.Attempts > 0 {
			t.Attempts--
		}
	})
}

// FinishTask records the outcome of owner's run (memory.Tasks).
func (s *Store) FinishTask(ctx context.Context, id, owner string, o memory.TaskOutcome, now, leaseUntil time.Time) error {
	if o.State != memory.TaskDone && o.State != memory.TaskFailed {
		return fmt.Errorf("memory: finish task %s: state %q is not an outcome", id, o.State)
	}
	return s.held(ctx, "finish task", id, owner, []string{memory.TaskRunning}, func(t *memory.TaskRecord) {
		t.State, t.Result, t.Error, t.Ended = o.State, clean(o.Result), clean(o.Error), now
		t.Delivered, t.Lease = false, leaseUntil
	})
}

// MarkTaskDelivered records the delivery of a finished task (memory.Tasks).
func (s *Store) MarkTaskDelivered(ctx context.Context, id, owner string) error {
	return s.held(ctx, "mark task delivered", id, owner, []string{memory.TaskDone, memory.TaskFailed}, func(t *memory.TaskRecord) {
		t.Delivered, t.Lease = true, time.Time{}
	})
}

// CancelTask cancels an active task of chat (memory.Tasks).
func (s *Store) CancelTask(ctx context.Context, id, chat string, now time.Time) (memory.TaskRecord, error) {
	op := "cancel task " + id
	n, ok := taskID(id)
	if !ok {
		return memory.TaskRecord{}, fmt.Errorf("memory: %s: %w", op, memory.ErrNotFound)
	}
	var before memory.TaskRecord
	err := s.tx(ctx, op, func(tx pgx.Tx) error {
		before = memory.TaskRecord{}
		var raw []byte
		err := tx.QueryRow(ctx, `SELECT rec::text FROM tasks WHERE id = $1 FOR UPDATE`, n).Scan(&raw)
		if errors.Is(err, pgx.ErrNoRows) {
			return memory.ErrNotFound
		}
		if err != nil {
			return err
		}
		t, err := decodeTask(raw)
		if err != nil {
			return err
		}
		if chat != "" && t.Chat != chat {
			return memory.ErrNotFound
		}
		before = t
		if !t.Active() {
			return nil
		}
		t.State, t.Ended, t.Delivered, t.Lease = memory.TaskCanceled, now, true, time.Time{}
		return writeTask(ctx, tx, n, t)
	})
	if err != nil {
		return memory.TaskRecord{}, err
	}
	return before, nil
}
