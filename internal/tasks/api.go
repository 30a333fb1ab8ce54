package tasks

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboard-bot/switchboard/memory"
)

// Spawn records a new queued task (the per-chat limit checked in the same
// write) and wakes the supervisor. The error of a refused task says why, for
// the model: "this chat already has 3 tasks running or queued (the limit)".
func (r *Runner) Spawn(ctx context.Context, t memory.TaskRecord) (memory.TaskRecord, error) {
	rec, err := r.o.Store.CreateTask(ctx, t, r.o.MaxPerChat, r.o.Now())
	if errors.Is(err, memory.ErrTaskLimit) {
		return memory.TaskRecord{}, fmt.Errorf("this chat already has %d background tasks running or queued (tasks.max_per_chat); wait for one to finish or stop one with /stop <id>", r.o.MaxPerChat)
	}
	if err != nil {
		return memory.TaskRecord{}, fmt.Errorf("start task: %w", err)
	}
	r.Wake()
	return rec, nil
}

// StopTask cancels task id of chat: state canceled, a run of this runner
// interrupted at once (one on another replica at its next lease renewal),
// nothing delivered. It returns the task as it was before; ErrNotFound
// (wrapped) when chat has no such task.
func (r *Runner) StopTask(ctx context.Context, id, chat string) (memory.TaskRecord, error) {
	id = strings.TrimSpace(id)
	before, err := r.o.Store.CancelTask(ctx, id, chat, r.o.Now())
	if err != nil {
		return memory.TaskRecord{}, err
	}
	if before.Active() {
		r.mu.Lock()
		if rn, ok := r.runs[id]; ok {
			rn.canceled = true
			rn.cancel(errStopped)
		}
		r.mu.Unlock()
	}
	return before, nil
}

// List returns chat's tasks, newest first (limit 0 = all).
func (r *Runner) List(ctx context.Context, chat string, limit int) ([]memory.TaskRecord, error) {
	return r.o.Store.ListTasks(ctx, memory.TaskFilter{Chat: chat, Limit: limit})
}

// Counts are the tasks queued and running (every replica's).
func (r *Runner) Counts(ctx context.Context) (memory.TaskCounts, error) {
	return r.o.Store.CountTasks(ctx)
}
