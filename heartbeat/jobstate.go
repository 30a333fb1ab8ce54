package heartbeat

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"
)

// jobState is a job's persisted scheduling state (KV "jobs/state/<name>").
type jobState struct {
	// Last is the scheduled time of the last occurrence handled (run, or
	// skipped); for a new recurring job, the moment it was first seen.
	Last time.Time `json:"last,omitzero"`
	// Spec is the schedule and zone Last belongs to (scheduleKey); a job
	// whose schedule changed starts afresh ("" = not yet recorded).
	Spec     string      `json:"spec,omitempty"`
	Paused   bool        `json:"paused,omitempty"`
	Failures int         `json:"failures,omitempty"` // current failure streak
	Alerted  bool        `json:"alerted,omitempty"`  // the streak was reported
	Done     bool        `json:"done,omitempty"`     // one-shot finished, skipped or given up
	Attempts int         `json:"attempts,omitempty"` // one-shot attempts so far
	RetryAt  time.Time   `json:"retry_at,omitzero"`
	Pending  *pendingRun `json:"pending,omitempty"`
}

// pendingRun keeps a failed one-shot's answer and finished deliveries so a
// retry neither calls the model again nor repeats a delivered target.
type pendingRun struct {
	Text      string            `json:"text,omitempty"`
	Delivered map[string]string `json:"delivered,omitempty"` // target → platform ids
}

const kvJobState = "jobs/state/"

func (j *Jobs) loadState(ctx context.Context, name string) (jobState, bool, error) {
	v, found, err := j.o.Store.KVGet(ctx, kvJobState+name)
	if err != nil || !found {
		return jobState{}, false, err
	}
	var st jobState
	if err := json.Unmarshal(v, &st); err != nil {
		j.log.Warn("job state unreadable; starting afresh", slog.String("job", name), slog.String("error", err.Error()))
		return jobState{}, false, nil
	}
	return st, true, nil
}

func (j *Jobs) saveState(ctx context.Context, name string, st jobState) error {
	v, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := j.o.Store.KVPut(ctx, kvJobState+name, v); err != nil {
		return fmt.Errorf("jobs: save state of %s: %w", name, err)
	}
	return nil
}

// lock marks name running; false if it already is.
func (j *Jobs) lock(name string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.running[name] {
		return false
	}
	j.running[name] = true
	return true
}

func (j *Jobs) unlock(name string) {
	j.mu.Lock()
	delete(j.running, name)
	j.mu.Unlock()
}
