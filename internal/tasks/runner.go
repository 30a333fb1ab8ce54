// Package tasks runs background tasks (issue 31): sub-agents the spawn tool
// starts, apart from the chat's turn, whose result is delivered to the chat
// as a reply that names the task ("Task t7 (title) finished: …").
//
// A Runner is owned by the daemon (Start with it, Stop with it; Stop is
// idempotent and waits for every goroutine the runner started). Its
// supervisor claims tasks from the store (memory.Tasks) up to max_running,
// cluster-wide, and runs each as agent.ProcessDirect:
//
//   - on its own session key, "<chat>#task:<id>", so it never holds the
//     chat's per-session lock and its history stays apart from the chat's;
//     but in the chat's workspace (agent.DirectOptions.FilesOf): it reads
//     the chat's files, and what it writes is the chat's, within the chat's
//     bounds, committed with the task's turn;
//   - with the task's prompt, the persona of the chat that spawned it, and
//     the tools the task asked for (all of them when it asked for none),
//     always without spawn itself: a task cannot start tasks. The agent
//     intersects them with the persona's tools;
//   - as a job-like turn named "task:<id>" (agent.CallInfo.JobName): tool
//     approvals are not waited for, the usage book counts it under that name,
//     send_message reaches only the chat that spawned it;
//   - under tasks.max_duration: a task that takes longer fails ("took
//     longer than 30m0s").
//
// Durability. A claim is a lease (cluster.lease_ttl) the run renews; a
// replica that dies loses it, and another (or the restarted process) claims
// the task again and runs it from its prompt: attempt 2. A task interrupted
// twice is reported failed ("interrupted twice") rather than run a third
// time, so a task that crashes the daemon cannot keep it in a crash loop. On
// bolt (one process: the file lock) a new process takes over the running
// tasks at start without waiting for their leases. A graceful stop releases
// the runner's tasks back to the queue (the attempt not counted).
//
// Completion is one conditional write (memory.Tasks.FinishTask): only the
// runner holding the live claim completes a task, once. The result is then
// delivered through the outbound router under the outbox key "task:<id>" and
// marked delivered; a runner that dies in between leaves it "to deliver",
// and whoever claims the delivery once the lease expired sends it under the
// same key, so chunks the platform confirmed are not sent again.
//
// Decisions: per-chat limits are checked when a task is created (the spawn
// tool gets a clear error), the global limit when one is claimed (the rest
// wait queued); /stop <id> cancels (state canceled, the run interrupted
// through its context, nothing delivered but the command's own "Task t7
// stopped"); on another replica the run notices at its next lease renewal.
// Delivery errors are retried after the lease, for a day, then given up
// (logged). The task's token budget is the agent's per-turn token_budget.
package tasks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/memory"
)

// Directer runs a turn without a platform message (*agent.Agent).
type Directer interface {
	ProcessDirect(ctx context.Context, sessionKey, text string, opts agent.DirectOptions) (string, error)
}

// Deliverer sends text to a target through the shared delivery path
// (outbound.Router).
type Deliverer interface {
	Deliver(ctx context.Context, target channels.Target, turnID, text string) ([]string, error)
}

// Defaults (DESIGN.md §9).
const (
	DefaultMaxPerChat  = 3
	DefaultMaxRunning  = 8
	DefaultMaxDuration = 30 * time.Minute
	DefaultLeaseTTL    = 15 * time.Second
	DefaultPoll        = 5 * time.Second
	// MaxAttempts is how often a task is started before an interruption is
	// reported as its failure.
	MaxAttempts = 2
	// GiveUpDelivery is how long an undeliverable result is retried.
	GiveUpDelivery = 24 * time.Hour
	// SpawnTool is the tool a task is never given.
	SpawnTool = "spawn"
)

// Options configure a Runner. Zero values mean the defaults.
type Options struct {
	Store   memory.Tasks
	Agent   Directer
	Deliver Deliverer
	// ToolNames lists the registered tools (the agent's registry), from
	// which a task's tools are chosen.
	ToolNames func() []string
	// Owner identifies this runner in claims; "" = a random id.
	Owner       string
	MaxPerChat  int
	MaxRunning  int
	MaxDuration time.Duration
	LeaseTTL    time.Duration
	// Poll is how often the supervisor looks for work besides Wake (tasks
	// other replicas created, expired leases).
	Poll time.Duration
	// Exclusive says no other runner shares the store (bolt): running tasks
	// left by a previous process are taken over at once.
	Exclusive bool
	Now       func() time.Time
	Log       *slog.Logger
	// OnRun, if set, is told each run's outcome (metrics).
	OnRun func(state string)
}

func (o Options) withDefaults() Options {
	if o.MaxPerChat == 0 {
		o.MaxPerChat = DefaultMaxPerChat
	}
	if o.MaxRunning <= 0 {
		o.MaxRunning = DefaultMaxRunning
	}
	if o.MaxDuration <= 0 {
		o.MaxDuration = DefaultMaxDuration
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Owner == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		o.Owner = "runner-" + hex.EncodeToString(b[:])
	}
	return o
}

// Runner claims, runs and delivers background tasks (see the package doc).
type Runner struct {
	o   Options
	log *slog.Logger

	wake chan struct{}

	mu       sync.Mutex
	started  bool
	stopped  bool
	cancel   context.CancelFunc
	runs     map[string]*run // the tasks this runner runs now, by id
	stopping bool            // Stop was called: runs end released, not failed
	wg       sync.WaitGroup
}

type run struct {
	cancel   context.CancelCauseFunc
	canceled bool // /stop: nothing to finish or deliver
}

// errStopped is the cause of a run's cancellation by /stop.
var errStopped = errors.New("task stopped")

// errLost is the cause when the runner's claim was lost.
var errLost = errors.New("task claim lost")

// New returns a runner; Start starts it.
func New(o Options) *Runner {
	o = o.withDefaults()
	return &Runner{o: o, log: o.Log.With(slog.String("component", "tasks")), wake: make(chan struct{}, 1), runs: map[string]*run{}}
}

// Owner is the runner's id in claims.
func (r *Runner) Owner() string { return r.o.Owner }

// Start starts the supervisor. A second Start, or one after Stop, does nothing.
func (r *Runner) Start(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started || r.stopped {
		return
	}
	r.started = true
	ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.supervise(ctx)
	}()
}

// Stop stops the supervisor and every run (released to the queue for the
// next process) and waits for them. Idempotent.
func (r *Runner) Stop() {
	r.mu.Lock()
	r.stopped, r.stopping = true, true
	cancel := r.cancel
	for _, rn := range r.runs {
		rn.cancel(context.Canceled)
	}
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	r.wg.Wait()
}

// Wake makes the supervisor look for work now (a task was created).
func (r *Runner) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *Runner) supervise(ctx context.Context) {
	t := time.NewTicker(r.o.Poll)
	defer t.Stop()
	first := true
	for {
		if err := r.tick(ctx, first); err != nil && ctx.Err() == nil {
			r.log.Warn("background tasks: looking for work failed", slog.String("err", err.Error()))
		}
		first = false
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-t.C:
		}
	}
}

// Tick does one round of the supervisor's work: deliveries a dead runner
// left, then claims up to the limits. The supervisor calls it on every wake
// and poll; tests with a simulated clock call it directly.
func (r *Runner) Tick(ctx context.Context) error { return r.tick(ctx, false) }

func (r *Runner) tick(ctx context.Context, first bool) error {
	claim := memory.TaskClaim{Owner: r.o.Owner, TTL: r.o.LeaseTTL, Takeover: first && r.o.Exclusive}
	for ctx.Err() == nil {
		claim.Now = r.o.Now()
		t, ok, err := r.o.Store.ClaimTaskDelivery(ctx, claim)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		r.log.Warn("delivering the result of a task whose runner stopped before it was delivered", slog.String("task", t.ID))
		r.deliver(ctx, t)
	}
	for ctx.Err() == nil {
		if r.active() >= r.o.MaxRunning {
			return nil
		}
		claim.Now = r.o.Now()
		claim.MaxRunning = r.o.MaxRunning
		t, ok, err := r.o.Store.ClaimTask(ctx, claim)
		if err != nil || !ok {
			return err
		}
		if t.Attempts > MaxAttempts {
			r.log.Error("a task was interrupted twice; not running it again", slog.String("task", t.ID))
			r.finish(ctx, t, memory.TaskOutcome{State: memory.TaskFailed, Error: "interrupted twice (the daemon stopped during it)"})
			continue
		}
		if t.Attempts > 1 {
			r.log.Warn("resuming a task whose runner stopped", slog.String("task", t.ID), slog.Int("attempt", t.Attempts))
		}
		r.start(ctx, t)
	}
	return nil
}

func (r *Runner) active() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.runs)
}

// Running reports whether this runner runs task id now.
func (r *Runner) Running(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.runs[id]
	return ok
}

func (r *Runner) start(ctx context.Context, t memory.TaskRecord) {
	rctx, cancel := context.WithCancelCause(ctx)
	rn := &run{cancel: cancel}
	r.mu.Lock()
	if r.stopping {
		r.mu.Unlock()
		cancel(context.Canceled)
		r.release(t)
		return
	}
	r.runs[t.ID] = rn
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		defer cancel(nil)
		r.execute(rctx, t, rn)
		r.mu.Lock()
		delete(r.runs, t.ID)
		r.mu.Unlock()
		r.Wake() // a slot is free
	}()
}

// release gives t back to the queue (a stopping runner).
func (r *Runner) release(t memory.TaskRecord) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.o.Store.ReleaseTask(ctx, t.ID, r.o.Owner); err != nil && !errors.Is(err, memory.ErrTaskLost) {
		r.log.Warn("could not release a task at stop; it resumes after its lease", slog.String("task", t.ID), slog.String("err", err.Error()))
	}
}
