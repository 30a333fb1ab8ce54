package bolt

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/memory"

	bbolt "go.etcd.io/bbolt"
)

// Background tasks (memory.Tasks) live in the bucket tasks, keyed by the
// big-endian sequence number that is also the task's id ("t7" is key 7),
// values JSON TaskRecords. Every change is one write transaction (bolt's
// single writer), so a claim, a finish or a cancel is decided on the
// record as it is: the conditional writes memory.Tasks promises. The bucket
// is created by the first task; the number of tasks is small (finished ones
// are few a day), so claims and counts walk it.

var bTasks = []byte("tasks")

var _ memory.Tasks = (*Store)(nil)

func taskKey(id string) ([]byte, bool) {
	n, err := strconv.ParseUint(strings.TrimPrefix(id, "t"), 10, 64)
	if err != nil || !strings.HasPrefix(id, "t") || n == 0 {
		return nil, false
	}
	return binary.BigEndian.AppendUint64(nil, n), true
}

func getTask(b *bbolt.Bucket, k []byte) (memory.TaskRecord, bool, error) {
	var t memory.TaskRecord
	if b == nil {
		return t, false, nil
	}
	v := b.Get(k)
	if v == nil {
		return t, false, nil
	}
	if err := json.Unmarshal(v, &t); err != nil {
		return t, false, fmt.Errorf("decode task %x: %w", k, err)
	}
	return t, true, nil
}

func putTask(b *bbolt.Bucket, k []byte, t memory.TaskRecord) error {
	v, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("encode task %s: %w", t.ID, err)
	}
	return b.Put(k, v)
}

// eachTask calls fn for every task, oldest first; fn returning false stops.
func eachTask(b *bbolt.Bucket, fn func(k []byte, t memory.TaskRecord) bool) error {
	if b == nil {
		return nil
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var t memory.TaskRecord
		if err := json.Unmarshal(v, &t); err != nil {
			return fmt.Errorf("decode task %x: %w", k, err)
		}
		if !fn(k, t) {
			return nil
		}
	}
	return nil
}

// CreateTask stores t as a new queued task (memory.Tasks).
func (s *Store) CreateTask(ctx context.Context, t memory.TaskRecord, maxPerChat int, now time.Time) (memory.TaskRecord, error) {
	if t.Chat == "" || strings.TrimSpace(t.Prompt) == "" {
		return memory.TaskRecord{}, fmt.Errorf("memory: create task: a task needs a chat and a prompt")
	}
	var out memory.TaskRecord
	err := s.update(ctx, "create task", func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bTasks)
		if err != nil {
			return fmt.Errorf("tasks bucket: %w", err)
		}
		out = memory.TaskRecord{}
		active, found := 0, false
		if maxPerChat > 0 || t.Key != "" {
			if err := eachTask(b, func(_ []byte, o memory.TaskRecord) bool {
				if t.Key != "" && o.Key == t.Key {
					out, found = o, true
					return false
				}
				if o.Chat == t.Chat && o.Active() {
					active++
				}
				return true
			}); err != nil {
				return err
			}
		}
		if found {
			return nil
		}
		if maxPerChat > 0 {
			if active >= maxPerChat {
				return fmt.Errorf("%w (%d running or queued, the limit is %d)", memory.ErrTaskLimit, active, maxPerChat)
			}
		}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		rec := t
		rec.ID = "t" + strconv.FormatUint(seq, 10)
		rec.State, rec.Owner, rec.Lease, rec.Attempts = memory.TaskQueued, "", time.Time{}, 0
		rec.Created, rec.Started, rec.Ended = now, time.Time{}, time.Time{}
		rec.Result, rec.Error, rec.Delivered = "", "", false
		out = rec
		return putTask(b, binary.BigEndian.AppendUint64(nil, seq), rec)
	})
	if err != nil {
		return memory.TaskRecord{}, err
	}
	return out, nil
}

// GetTask returns task id (memory.Tasks).
func (s *Store) GetTask(ctx context.Context, id string) (memory.TaskRecord, error) {
	k, ok := taskKey(id)
	if !ok {
		return memory.TaskRecord{}, fmt.Errorf("memory: get task %q: %w", id, memory.ErrNotFound)
	}
	var t memory.TaskRecord
	var found bool
	err := s.view(ctx, "get task "+id, func(tx *bbolt.Tx) error {
		var err error
		t, found, err = getTask(tx.Bucket(bTasks), k)
		return err
	})
	if err != nil {
		return memory.TaskRecord{}, err
	}
	if !found {
		return memory.TaskRecord{}, fmt.Errorf("memory: get task %s: %w", id, memory.ErrNotFound)
	}
	return t, nil
}

// ListTasks returns the tasks f selects, newest first (memory.Tasks).
func (s *Store) ListTasks(ctx context.Context, f memory.TaskFilter) ([]memory.TaskRecord, error) {
	var out []memory.TaskRecord
	err := s.view(ctx, "list tasks", func(tx *bbolt.Tx) error {
		out = nil
		b := tx.Bucket(bTasks)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			var t memory.TaskRecord
			if err := json.Unmarshal(v, &t); err != nil {
				return fmt.Errorf("decode task %x: %w", k, err)
			}
			if (f.Chat != "" && t.Chat != f.Chat) || (f.Active && !t.Active()) {
				continue
			}
			out = append(out, t)
			if f.Limit > 0 && len(out) >= f.Limit {
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

// CountTasks counts the active tasks (memory.Tasks).
func (s *Store) CountTasks(ctx context.Context) (memory.TaskCounts, error) {
	var n memory.TaskCounts
	err := s.view(ctx, "count tasks", func(tx *bbolt.Tx) error {
		n = memory.TaskCounts{}
		return eachTask(tx.Bucket(bTasks), func(_ []byte, t memory.TaskRecord) bool {
			switch t.State {
			case memory.TaskQueued:
				n.Queued++
			case memory.TaskRunning:
				n.Running++
			}
			return true
		})
	})
	return n, err
}

// ClaimTask claims a queued task or one whose lease expired (memory.Tasks).
func (s *Store) ClaimTask(ctx context.Context, c memory.TaskClaim) (memory.TaskRecord, bool, error) {
	return s.claimTask(ctx, "claim task", c, c.MaxRunning, memory.ClaimableTask, func(t *memory.TaskRecord) {
		t.State, t.Attempts, t.Started = memory.TaskRunning, t.Attempts+1, c.Now
		t.Error = ""
	})
}

// ClaimTaskDelivery claims a finished, undelivered task whose lease expired
// (memory.Tasks).
func (s *Store) ClaimTaskDelivery(ctx context.Context, c memory.TaskClaim) (memory.TaskRecord, bool, error) {
	return s.claimTask(ctx, "claim task delivery", c, 0, memory.DeliverableTask, func(*memory.TaskRecord) {})
}

func (s *Store) claimTask(ctx context.Context, op string, c memory.TaskClaim, limit int, claimable func(memory.TaskRecord, memory.TaskClaim) bool, apply func(*memory.TaskRecord)) (memory.TaskRecord, bool, error) {
	if c.Owner == "" {
		return memory.TaskRecord{}, false, fmt.Errorf("memory: %s: empty owner", op)
	}
	var out memory.TaskRecord
	var ok bool
	err := s.update(ctx, op, func(tx *bbolt.Tx) error {
		out, ok = memory.TaskRecord{}, false
		b := tx.Bucket(bTasks)
		if b == nil {
			return nil
		}
		var key []byte
		live := 0
		if err := eachTask(b, func(k []byte, t memory.TaskRecord) bool {
			if t.State == memory.TaskRunning && !memory.ClaimableTask(t, c) {
				live++
			}
			if key == nil && claimable(t, c) {
				key, out = append([]byte(nil), k...), t
			}
			return true
		}); err != nil {
			return err
		}
		if key == nil || (limit > 0 && live >= limit) {
			return nil
		}
		out.Owner, out.Lease = c.Owner, c.Now.Add(c.TTL)
		apply(&out)
		ok = true
		return putTask(b, key, out)
	})
	if err != nil || !ok {
		return memory.TaskRecord{}, false, err
	}
	return out, true, nil
}

// held runs fn on task id when owner holds it in one of states; otherwise
// ErrTaskLost (ErrNotFound for an unknown id) and nothing is written.
func (s *Store) held(ctx context.Context, op, id, owner string, states []string, fn func(*memory.TaskRecord)) error {
	k, ok := taskKey(id)
	if !ok {
		return fmt.Errorf("memory: %s %q: %w", op, id, memory.ErrNotFound)
	}
	return s.update(ctx, op+" "+id, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bTasks)
		t, found, err := getTask(b, k)
		if err != nil {
			return err
		}
		if !found {
			return memory.ErrNotFound
		}
		match := false
		for _, st := range states {
			match = match || t.State == st
		}
		if !match || t.Owner != owner {
			return fmt.Errorf("%w (state %s)", memory.ErrTaskLost, t.State)
		}
		fn(&t)
		return putTask(b, k, t)
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
		t.State, t.Result, t.Error, t.Ended = o.State, o.Result, o.Error, now
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
	k, ok := taskKey(id)
	if !ok {
		return memory.TaskRecord{}, fmt.Errorf("memory: cancel task %q: %w", id, memory.ErrNotFound)
	}
	var before memory.TaskRecord
	err := s.update(ctx, "cancel task "+id, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bTasks)
		t, found, err := getTask(b, k)
		if err != nil {
			return err
		}
		if !found || (chat != "" && t.Chat != chat) {
			return memory.ErrNotFound
		}
		before = t
		if !t.Active() {
			return nil
		}
		t.State, t.Ended, t.Delivered, t.Lease = memory.TaskCanceled, now, true, time.Time{}
		return putTask(b, k, t)
	})
	if err != nil {
		return memory.TaskRecord{}, err
	}
	return before, nil
}
