package tasks_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/tasks"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
	"github.com/switchboard-bot/switchboard/memory/storetest"
)

// directCall is one ProcessDirect the fake agent received.
type directCall struct {
	key, text string
	opts      agent.DirectOptions
}

// fakeAgent answers each task with answer, or waits for its context when
// block is set; started receives every call.
type fakeAgent struct {
	answer  string
	err     error
	block   bool
	started chan directCall
	ended   chan error
}

func newFakeAgent(answer string) *fakeAgent {
	return &fakeAgent{answer: answer, started: make(chan directCall, 16), ended: make(chan error, 16)}
}

func (f *fakeAgent) ProcessDirect(ctx context.Context, key, text string, opts agent.DirectOptions) (string, error) {
	f.started <- directCall{key: key, text: text, opts: opts}
	if f.block {
		<-ctx.Done()
		f.ended <- ctx.Err()
		return "", ctx.Err()
	}
	return f.answer, f.err
}

type delivery struct{ target, key, text string }

// fakeOut records deliveries.
type fakeOut struct {
	mu   sync.Mutex
	all  []delivery
	sent chan delivery
	fail error
}

func newFakeOut() *fakeOut { return &fakeOut{sent: make(chan delivery, 16)} }

func (f *fakeOut) Deliver(_ context.Context, target channels.Target, turnID, text string) ([]string, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	d := delivery{target: target.String(), key: turnID, text: text}
	f.mu.Lock()
	f.all = append(f.all, d)
	f.mu.Unlock()
	f.sent <- d
	return []string{"m1"}, nil
}

func (f *fakeOut) deliveries() []delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.all)
}

func openStore(t *testing.T, clk *storetest.Clock) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(filepath.Join(t.TempDir(), bolt.FileName), storetest.TestOptions(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newRunner(t *testing.T, s memory.Tasks, a tasks.Directer, out tasks.Deliverer, clk *storetest.Clock, mod func(*tasks.Options)) *tasks.Runner {
	t.Helper()
	o := tasks.Options{Store: s, Agent: a, Deliver: out, Now: clk.Now, LeaseTTL: time.Hour, Poll: time.Hour,
		Log:       slog.New(slog.DiscardHandler),
		ToolNames: func() []string { return []string{"current_time", "spawn", "web_fetch"} }}
	if mod != nil {
		mod(&o)
	}
	r := tasks.New(o)
	t.Cleanup(r.Stop)
	return r
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func getTask(t *testing.T, s memory.Tasks, id string) memory.TaskRecord {
	t.Helper()
	rec, err := s.GetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// A spawned task runs on its own session with its tools (never spawn), and
// its result reaches the chat once, naming the task.
func TestTaskRunsAndDeliversOnce(t *testing.T) {
	ctx := context.Background()
	clk := storetest.NewClock()
	s := openStore(t, clk)
	a, out := newFakeAgent("The answer is 42."), newFakeOut()
	r := newRunner(t, s, a, out, clk, nil)
	r.Start(ctx)
	rec, err := r.Spawn(ctx, memory.TaskRecord{Chat: "telegram:1", Title: "sum", Persona: "assistant", Prompt: "add it up", Budget: 5000})
	if err != nil {
		t.Fatal(err)
	}
	call := wait(t, a.started, "the task's turn")
	// The chat's task is billed to the chat, within its own budget.
	if call.opts.BillTo != "telegram:1" || call.opts.TokenBudget != 5000 {
		t.Errorf("task turn billed to %q with budget %d, want telegram:1 and 5000", call.opts.BillTo, call.opts.TokenBudget)
	}
	if call.key != "telegram:1#task:"+rec.ID || call.text != "add it up" || call.opts.Persona != "assistant" ||
		call.opts.JobName != "task:"+rec.ID || !slices.Equal(call.opts.Tools, []string{"current_time", "web_fetch"}) ||
		!slices.Equal(call.opts.DeliverTo, []string{"telegram:1"}) {
		t.Fatalf("turn: %+v", call)
	}
	d := wait(t, out.sent, "the delivery")
	want := "Task " + rec.ID + " (sum) finished:\n\nThe answer is 42."
	if d.target != "telegram:1" || d.text != want || d.key != "task:"+rec.ID {
		t.Fatalf("delivery %+v, want text %q", d, want)
	}
	r.Stop()
	got := getTask(t, s, rec.ID)
	if got.State != memory.TaskDone || !got.Delivered || got.Result != "The answer is 42." {
		t.Fatalf("task after delivery: %+v", got)
	}
	// Another runner looking for work finds nothing to run or deliver.
	r2 := newRunner(t, s, a, out, clk, func(o *tasks.Options) { o.Exclusive = true })
	clk.Advance(2 * time.Hour)
	if err := r2.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(out.deliveries()); n != 1 {
		t.Fatalf("%d deliveries, want 1", n)
	}
}

// Tools the task asked for are intersected with the registry, spawn never
// among them; a failure is delivered as "Task t1 failed: …".
func TestTaskToolsAndFailure(t *testing.T) {
	ctx := context.Background()
	clk := storetest.NewClock()
	s := openStore(t, clk)
	a, out := newFakeAgent(""), newFakeOut()
	a.err = errors.New("the model is unreachable")
	r := newRunner(t, s, a, out, clk, nil)
	rec, err := r.Spawn(ctx, memory.TaskRecord{Chat: "slack:C1", Title: "fetch", Prompt: "p", Tools: []string{"web_*", "spawn"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	call := wait(t, a.started, "the turn")
	if !slices.Equal(call.opts.Tools, []string{"web_fetch"}) {
		t.Fatalf("tools %v, want [web_fetch]", call.opts.Tools)
	}
	d := wait(t, out.sent, "the delivery")
	if d.text != "Task "+rec.ID+" (fetch) failed: "+agent.FriendlyError(a.err) {
		t.Fatalf("delivery %q", d.text)
	}
	r.Stop() // the run's goroutine has recorded the delivery
	if got := getTask(t, s, rec.ID); got.State != memory.TaskFailed || !got.Delivered {
		t.Fatalf("task %+v", got)
	}
}

// /stop <id> interrupts a running task through its context; nothing is
// delivered and the task is canceled.
func TestStopCancelsRunningTask(t *testing.T) {
	ctx := context.Background()
	clk := storetest.NewClock()
	s := openStore(t, clk)
	a, out := newFakeAgent(""), newFakeOut()
	a.block = true
	r := newRunner(t, s, a, out, clk, nil)
	r.Start(ctx)
	rec, err := r.Spawn(ctx, memory.TaskRecord{Chat: "telegram:1", Title: "long", Prompt: "p"})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, a.started, "the turn")
	if _, err := r.StopTask(ctx, rec.ID, "telegram:2"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("stop from another chat: %v", err)
	}
	before, err := r.StopTask(ctx, rec.ID, "telegram:1")
	if err != nil || before.State != memory.TaskRunning {
		t.Fatalf("stop: %+v %v", before, err)
	}
	if err := wait(t, a.ended, "the turn's end"); !errors.Is(err, context.Canceled) {
		t.Fatalf("turn ended with %v", err)
	}
	r.Stop()
	if got := getTask(t, s, rec.ID); got.State != memory.TaskCanceled {
		t.Fatalf("task %+v", got)
	}
	if d := out.deliveries(); len(d) != 0 {
		t.Fatalf("delivered %+v", d)
	}
}

// The fourth task of a chat is refused with a clear error; max_running
// bounds the tasks running at once.
func TestTaskLimits(t *testing.T) {
	ctx := context.Background()
	clk := storetest.NewClock()
	s := openStore(t, clk)
	a, out := newFakeAgent(""), newFakeOut()
	a.block = true
	r := newRunner(t, s, a, out, clk, func(o *tasks.Options) { o.MaxRunning = 2 })
	for i := range 3 {
		if _, err := r.Spawn(ctx, memory.TaskRecord{Chat: "telegram:1", Title: "t", Prompt: "p"}); err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
	}
	_, err := r.Spawn(ctx, memory.TaskRecord{Chat: "telegram:1", Title: "t", Prompt: "p"})
	if err == nil || !strings.Contains(err.Error(), "already has 3 background tasks") {
		t.Fatalf("4th task: %v", err)
	}
	if _, err := r.Spawn(ctx, memory.TaskRecord{Chat: "telegram:2", Title: "t", Prompt: "p"}); err != nil {
		t.Fatalf("another chat: %v", err)
	}
	if err := r.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	wait(t, a.started, "turn 1")
	wait(t, a.started, "turn 2")
	n, err := r.Counts(ctx)
	if err != nil || n != (memory.TaskCounts{Queued: 2, Running: 2}) {
		t.Fatalf("counts %+v %v", n, err)
	}
	select {
	case c := <-a.started:
		t.Fatalf("a third task started: %+v", c)
	default:
	}
}

// A replica that died leaves its task running: another runner takes it over
// once the lease expired (attempt 2) and delivers it once; a task
// interrupted twice is reported failed, not run a third time.
func TestCrashedRunnerIsTakenOver(t *testing.T) {
	ctx := context.Background()
	clk := storetest.NewClock()
	s := openStore(t, clk)
	ttl := 15 * time.Second
	claimDead := func(owner string) memory.TaskRecord {
		t.Helper()
		c, ok, err := s.ClaimTask(ctx, memory.TaskClaim{Owner: owner, Now: clk.Now(), TTL: ttl})
		if err != nil || !ok {
			t.Fatalf("claim: %v %v", ok, err)
		}
		return c
	}
	resumed, err := s.CreateTask(ctx, memory.TaskRecord{Chat: "telegram:1", Title: "resumed", Prompt: "p"}, 3, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	claimDead("dead") // attempt 1, then the replica died
	a, out := newFakeAgent("done at last"), newFakeOut()
	r := newRunner(t, s, a, out, clk, func(o *tasks.Options) { o.LeaseTTL = ttl; o.Owner = "b" })
	if err := r.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-a.started:
		t.Fatalf("a live lease was taken over: %+v", c)
	default:
	}
	clk.Advance(ttl + time.Second)
	if err := r.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	wait(t, a.started, "the resumed turn")
	d := wait(t, out.sent, "the delivery")
	if d.text != "Task "+resumed.ID+" (resumed) finished:\n\ndone at last" {
		t.Fatalf("delivery %q", d.text)
	}
	r.Stop()
	if got := getTask(t, s, resumed.ID); got.Attempts != 2 || got.State != memory.TaskDone || !got.Delivered || got.Owner != "b" {
		t.Fatalf("task %+v", got)
	}

	twice, err := s.CreateTask(ctx, memory.TaskRecord{Chat: "telegram:1", Title: "crashy", Prompt: "p"}, 3, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	claimDead("dead1")
	clk.Advance(ttl + time.Second)
	claimDead("dead2")
	clk.Advance(ttl + time.Second)
	r2 := newRunner(t, s, a, out, clk, func(o *tasks.Options) { o.LeaseTTL = ttl })
	if err := r2.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	d = wait(t, out.sent, "the failure")
	if !strings.HasPrefix(d.text, "Task "+twice.ID+" (crashy) failed: interrupted twice") {
		t.Fatalf("delivery %q", d.text)
	}
	select {
	case c := <-a.started:
		t.Fatalf("a task interrupted twice ran again: %+v", c)
	default:
	}
	if n := len(out.deliveries()); n != 2 {
		t.Fatalf("%d deliveries, want 2", n)
	}
}

// A runner that finished a task and died before delivering it: the result
// is delivered once, by the runner that claims the delivery after the lease.
func TestFinishedUndeliveredIsDeliveredOnce(t *testing.T) {
	ctx := context.Background()
	clk := storetest.NewClock()
	s := openStore(t, clk)
	ttl := 15 * time.Second
	rec, err := s.CreateTask(ctx, memory.TaskRecord{Chat: "discord:9", Title: "report", Prompt: "p"}, 3, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.ClaimTask(ctx, memory.TaskClaim{Owner: "dead", Now: clk.Now(), TTL: ttl}); !ok || err != nil {
		t.Fatalf("claim %v %v", ok, err)
	}
	if err := s.FinishTask(ctx, rec.ID, "dead", memory.TaskOutcome{State: memory.TaskDone, Result: "the report"}, clk.Now(), clk.Now().Add(ttl)); err != nil {
		t.Fatal(err)
	}
	a, out := newFakeAgent("never"), newFakeOut()
	r := newRunner(t, s, a, out, clk, func(o *tasks.Options) { o.LeaseTTL = ttl })
	mustTick := func() {
		t.Helper()
		if err := r.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mustTick()
	if n := len(out.deliveries()); n != 0 {
		t.Fatalf("delivered under the dead runner's lease: %d", n)
	}
	clk.Advance(ttl + time.Second)
	mustTick()
	mustTick()
	if d := out.deliveries(); len(d) != 1 || d[0].text != "Task "+rec.ID+" (report) finished:\n\nthe report" || d[0].target != "discord:9" {
		t.Fatalf("deliveries %+v", d)
	}
	select {
	case c := <-a.started:
		t.Fatalf("a finished task ran again: %+v", c)
	default:
	}
}

// Stopping the daemon releases its running tasks to the queue (the attempt
// not counted); the next runner runs them.
func TestStopReleasesRunningTasks(t *testing.T) {
	ctx := context.Background()
	clk := storetest.NewClock()
	s := openStore(t, clk)
	a, out := newFakeAgent(""), newFakeOut()
	a.block = true
	r := newRunner(t, s, a, out, clk, nil)
	r.Start(ctx)
	rec, err := r.Spawn(ctx, memory.TaskRecord{Chat: "telegram:1", Title: "x", Prompt: "p"})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, a.started, "the turn")
	r.Stop()
	r.Stop() // idempotent
	if got := getTask(t, s, rec.ID); got.State != memory.TaskQueued || got.Attempts != 0 || got.Owner != "" {
		t.Fatalf("after stop: %+v", got)
	}
	if d := out.deliveries(); len(d) != 0 {
		t.Fatalf("delivered %+v", d)
	}
}
