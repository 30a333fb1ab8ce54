package memory

import (
	"context"
	"errors"
	"time"
)

// Background tasks (issue 31): a sub-agent started by the spawn tool, run
// apart from the chat's turn and delivered to the chat when it ends.
//
// A task's life in the store:
//
//	queued ──Claim──▶ running ──Finish──▶ done | failed ──MarkDelivered──▶ (delivered)
//	   │                 │  ▲
//	   │                 │  └─ Claim again when the lease expired (its runner died)
//	   └──Cancel──▶ canceled ◀──Cancel──┘
//
// Every step is one conditional write, so two runners (two replicas, or a
// restarted process beside a dead one's lease) never run one task at once and
// never both complete it: ClaimTask takes a queued task or a running one
// whose lease expired; RenewTask, FinishTask and ClaimTaskDelivery succeed
// only for the owner of a live claim. FinishTask leaves the task
// "to deliver" (Delivered false) with its owner's lease renewed, in the same
// transaction as the outcome; the owner delivers at once and marks it
// delivered. Should it die in between, ClaimTaskDelivery gives the finished,
// undelivered task to another runner once the lease expired, and that runner
// delivers it under the same outbox key ("task:<id>"), so chunks the
// platform confirmed are not sent again. A task is thus completed once and
// delivered once (up to the single platform call the outbox cannot know
// about, DESIGN.md §2).
//
// Tasks is implemented by every memory.Store of this project but is not part
// of memory.Store: callers that run tasks assert it.

// Task states.
const (
	TaskQueued   = "queued"
	TaskRunning  = "running"
	TaskDone     = "done"
	TaskFailed   = "failed"
	TaskCanceled = "canceled"
)

// ErrTaskLimit is returned by CreateTask when the chat already has its
// maximum of queued and running tasks.
var ErrTaskLimit = errors.New("too many tasks in this chat")

// ErrTaskLost is returned by RenewTask, FinishTask and MarkTaskDelivered when
// the caller's claim is no longer valid: the task was canceled, or another
// runner took it over after the lease expired.
var ErrTaskLost = errors.New("the task is no longer this runner's")

// TaskRecord is one background task.
type TaskRecord struct {
	ID      string `json:"id"`   // "t7": short, for humans; assigned by CreateTask
	Chat    string `json:"chat"` // the session key of the chat that spawned it (or the job's session)
	Title   string `json:"title"`
	Persona string `json:"persona,omitempty"`
	Prompt  string `json:"prompt"`
	// Tools restricts the sub-agent's tools (nil = the persona's).
	Tools []string `json:"tools,omitempty"`
	// Budget is the sub-agent's token budget (0 = the agent's).
	Budget int `json:"budget,omitempty"`
	// DeliverTo are the targets of the result (empty = Chat).
	DeliverTo []string `json:"deliver_to,omitempty"`
	// Job names the job whose turn spawned it ("" for a chat turn).
	Job string `json:"job,omitempty"`
	// Key, when set, makes CreateTask idempotent: a task with the same key
	// is returned instead of a new one (a replayed turn's spawn call).
	Key string `json:"key,omitempty"`

	State     string    `json:"state"`
	Owner     string    `json:"owner,omitempty"` // the runner holding the claim
	Lease     time.Time `json:"lease,omitzero"`  // the claim's end unless renewed
	Attempts  int       `json:"attempts"`        // claims that started a run
	Created   time.Time `json:"created"`
	Started   time.Time `json:"started,omitzero"`
	Ended     time.Time `json:"ended,omitzero"`
	Result    string    `json:"result,omitempty"`
	Error     string    `json:"error,omitempty"`
	Delivered bool      `json:"delivered,omitempty"` // the result reached the chat (or there is none to send)
}

// Active says whether the task is queued or running.
func (t TaskRecord) Active() bool { return t.State == TaskQueued || t.State == TaskRunning }

// Targets are where the task's result goes.
func (t TaskRecord) Targets() []string {
	if len(t.DeliverTo) > 0 {
		return t.DeliverTo
	}
	return []string{t.Chat}
}

// TaskClaim asks ClaimTask for a task to run.
type TaskClaim struct {
	Owner string        // the runner's id (unique per process)
	Now   time.Time     // leases ending at or before Now are expired
	TTL   time.Duration // the new lease is Now+TTL
	// MaxRunning, when > 0, is the cluster-wide limit of running tasks with
	// a live lease: ClaimTask claims nothing when it is reached.
	MaxRunning int
	// Takeover claims running tasks whatever their lease: the caller knows
	// no other runner is alive (bolt: the file lock is this process's).
	Takeover bool
}

// TaskOutcome is how a run ended.
type TaskOutcome struct {
	State  string // TaskDone | TaskFailed
	Result string
	Error  string
}

// TaskFilter selects tasks for ListTasks; zero fields do not filter.
type TaskFilter struct {
	Chat   string
	Active bool // queued and running only
	Limit  int  // newest first; 0 = all
}

// TaskCounts are the tasks queued and running now.
type TaskCounts struct {
	Queued  int `json:"queued"`
	Running int `json:"running"`
}

// Tasks stores background tasks (see above).
type Tasks interface {
	// CreateTask stores t as queued with a new ID and Created = now and
	// returns it. With maxPerChat > 0 it refuses (ErrTaskLimit, nothing
	// written) when t.Chat already has that many active tasks; the check
	// and the write are one transaction. When t.Key is set and a task with
	// that key exists, that task is returned and nothing is written.
	CreateTask(ctx context.Context, t TaskRecord, maxPerChat int, now time.Time) (TaskRecord, error)
	// GetTask returns the task id; ErrNotFound when there is none.
	GetTask(ctx context.Context, id string) (TaskRecord, error)
	// ListTasks returns the tasks f selects, newest first.
	ListTasks(ctx context.Context, f TaskFilter) ([]TaskRecord, error)
	// CountTasks counts the active tasks.
	CountTasks(ctx context.Context) (TaskCounts, error)
	// ClaimTask claims the oldest queued task, or a running one whose lease
	// expired, for c.Owner: state running, Lease c.Now+c.TTL, Attempts+1,
	// Started set. ok is false when there is none (or MaxRunning is reached).
	ClaimTask(ctx context.Context, c TaskClaim) (t TaskRecord, ok bool, err error)
	// RenewTask extends the lease of a running task owner holds to until;
	// ErrTaskLost when it no longer does.
	RenewTask(ctx context.Context, id, owner string, until time.Time) error
	// ReleaseTask gives a running task owner holds back to the queue
	// (state queued, no owner, the attempt not counted): its runner is
	// shutting down and did not finish it. ErrTaskLost when owner no longer
	// holds it.
	ReleaseTask(ctx context.Context, id, owner string) error
	// FinishTask records the outcome of owner's run (state, result, error,
	// Ended = now, Delivered false, the lease renewed to leaseUntil for the
	// delivery); ErrTaskLost (nothing written) unless the task is running
	// under owner's claim.
	FinishTask(ctx context.Context, id, owner string, o TaskOutcome, now, leaseUntil time.Time) error
	// ClaimTaskDelivery claims a finished, undelivered task whose lease
	// expired (its runner died before delivering) for c.Owner, renewing the
	// lease; ok is false when there is none.
	ClaimTaskDelivery(ctx context.Context, c TaskClaim) (t TaskRecord, ok bool, err error)
	// MarkTaskDelivered records that the result of a finished task owner
	// holds reached the chat; ErrTaskLost when owner no longer holds it.
	MarkTaskDelivered(ctx context.Context, id, owner string) error
	// CancelTask cancels an active task of chat (any chat when chat is "")
	// at now: state canceled, nothing to deliver. It returns the task as it
	// was before; ErrNotFound when chat has no task id; a task that already
	// ended is returned unchanged with a nil error (the caller tells).
	CancelTask(ctx context.Context, id, chat string, now time.Time) (TaskRecord, error)
}

// ClaimableTask says whether ClaimTask may take t under c.
func ClaimableTask(t TaskRecord, c TaskClaim) bool {
	switch t.State {
	case TaskQueued:
		return true
	case TaskRunning:
		return c.Takeover && t.Owner != c.Owner || !t.Lease.After(c.Now)
	}
	return false
}

// DeliverableTask says whether ClaimTaskDelivery may take t under c.
func DeliverableTask(t TaskRecord, c TaskClaim) bool {
	if (t.State != TaskDone && t.State != TaskFailed) || t.Delivered {
		return false
	}
	return c.Takeover && t.Owner != c.Owner || !t.Lease.After(c.Now)
}
