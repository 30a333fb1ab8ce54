package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

// tasksOf returns s's memory.Tasks or fails the test.
func tasksOf(t *testing.T, s memory.Store) memory.Tasks {
	t.Helper()
	ts, ok := s.(memory.Tasks)
	if !ok {
		t.Fatalf("%T does not implement memory.Tasks", s)
	}
	return ts
}

func newTask(chat, title string) memory.TaskRecord {
	return memory.TaskRecord{Chat: chat, Title: title, Prompt: "do " + title, Tools: []string{"web_fetch"}, Budget: 1000}
}

// testTasksLifecycle: create with the per-chat limit, list, count, claim,
// renew, finish once, deliver once, cancel; a reopen keeps it all and ids
// keep growing.
func (h harness) testTasksLifecycle(t *testing.T) {
	ctx := context.Background()
	s, clk, dir := h.openTest(t)
	ts := tasksOf(t, s)
	now := clk.Now()
	chat, other := "telegram:1", "telegram:1:2"

	var ids []string
	for i := range 3 {
		rec, err := ts.CreateTask(ctx, newTask(chat, fmt.Sprint("a", i)), 3, now.Add(time.Duration(i)*time.Second))
		mustNo(t, err)
		if rec.State != memory.TaskQueued || rec.ID == "" || !rec.Created.Equal(now.Add(time.Duration(i)*time.Second)) {
			t.Fatalf("created %+v", rec)
		}
		ids = append(ids, rec.ID)
	}
	if ids[0] == ids[1] || ids[1] == ids[2] {
		t.Fatalf("ids not unique: %v", ids)
	}
	// The fourth of one chat is refused, another chat's is not.
	if _, err := ts.CreateTask(ctx, newTask(chat, "a3"), 3, now); !errors.Is(err, memory.ErrTaskLimit) {
		t.Fatalf("4th task of a chat: %v, want ErrTaskLimit", err)
	}
	o, err := ts.CreateTask(ctx, newTask(other, "b0"), 3, now.Add(time.Minute))
	mustNo(t, err)
	// A keyed task (a spawn call of a turn) is created once: the same key
	// again returns it, even at the chat's limit.
	keyed := newTask(other, "k")
	keyed.Key = "turn-1|abc"
	k1, err := ts.CreateTask(ctx, keyed, 3, now)
	mustNo(t, err)
	k2, err := ts.CreateTask(ctx, keyed, 2, now.Add(time.Hour))
	mustNo(t, err)
	if k1.ID != k2.ID || k2.Key != keyed.Key || !k2.Created.Equal(now) {
		t.Fatalf("keyed task created twice: %+v, %+v", k1, k2)
	}
	if _, err := ts.CancelTask(ctx, k1.ID, other, now); err != nil {
		t.Fatal(err)
	}
	if len(ids[0]) > 8 {
		t.Fatalf("id %q is not short", ids[0])
	}

	list, err := ts.ListTasks(ctx, memory.TaskFilter{Chat: chat})
	mustNo(t, err)
	if len(list) != 3 || list[0].ID != ids[2] || list[2].ID != ids[0] || list[2].Prompt != "do a0" ||
		len(list[2].Tools) != 1 || list[2].Budget != 1000 {
		t.Fatalf("list of chat (newest first): %+v", list)
	}
	if all, _ := ts.ListTasks(ctx, memory.TaskFilter{Limit: 2}); len(all) != 2 || all[1].ID != o.ID {
		t.Fatalf("list limit 2: %+v", all)
	}

	// Claims take the oldest queued task first.
	lease := 30 * time.Second
	c, ok, err := ts.ClaimTask(ctx, memory.TaskClaim{Owner: "r1", Now: now, TTL: lease})
	mustNo(t, err)
	if !ok || c.ID != ids[0] || c.State != memory.TaskRunning || c.Owner != "r1" || c.Attempts != 1 ||
		!c.Lease.Equal(now.Add(lease)) || !c.Started.Equal(now) {
		t.Fatalf("claim: ok=%v %+v", ok, c)
	}
	if n, _ := ts.CountTasks(ctx); n != (memory.TaskCounts{Queued: 3, Running: 1}) { // o, ids[1], ids[2]
		t.Fatalf("counts: %+v", n)
	}
	mustNo(t, ts.RenewTask(ctx, c.ID, "r1", now.Add(time.Minute)))
	// A runner shutting down releases its task: queued again, the attempt
	// not counted, claimed again by the next one.
	mustNo(t, ts.ReleaseTask(ctx, c.ID, "r1"))
	if err := ts.ReleaseTask(ctx, c.ID, "r1"); !errors.Is(err, memory.ErrTaskLost) {
		t.Fatalf("second release: %v", err)
	}
	c, ok, err = ts.ClaimTask(ctx, memory.TaskClaim{Owner: "r1", Now: now, TTL: lease})
	mustNo(t, err)
	if !ok || c.ID != ids[0] || c.Attempts != 1 {
		t.Fatalf("claim after release: ok=%v %+v", ok, c)
	}
	if err := ts.RenewTask(ctx, c.ID, "r2", now.Add(time.Minute)); !errors.Is(err, memory.ErrTaskLost) {
		t.Fatalf("renew by a non-owner: %v", err)
	}
	// Finish once: a second finish, or one by another runner, is refused.
	done := memory.TaskOutcome{State: memory.TaskDone, Result: "the answer"}
	if err := ts.FinishTask(ctx, c.ID, "r2", done, now, now.Add(lease)); !errors.Is(err, memory.ErrTaskLost) {
		t.Fatalf("finish by a non-owner: %v", err)
	}
	mustNo(t, ts.FinishTask(ctx, c.ID, "r1", done, now.Add(time.Second), now.Add(lease)))
	if err := ts.FinishTask(ctx, c.ID, "r1", done, now, now.Add(lease)); !errors.Is(err, memory.ErrTaskLost) {
		t.Fatalf("second finish: %v", err)
	}
	got, err := ts.GetTask(ctx, c.ID)
	mustNo(t, err)
	if got.State != memory.TaskDone || got.Result != "the answer" || got.Delivered || !got.Ended.Equal(now.Add(time.Second)) {
		t.Fatalf("finished: %+v", got)
	}
	// The finisher's lease covers its delivery: nobody else claims it.
	if d, ok, err := ts.ClaimTaskDelivery(ctx, memory.TaskClaim{Owner: "r2", Now: now.Add(time.Second), TTL: lease}); err != nil || ok {
		t.Fatalf("delivery claim under a live lease: %v %+v %v", ok, d, err)
	}
	mustNo(t, ts.MarkTaskDelivered(ctx, c.ID, "r1"))
	if _, ok, _ := ts.ClaimTaskDelivery(ctx, memory.TaskClaim{Owner: "r2", Now: now.Add(time.Hour), TTL: lease}); ok {
		t.Fatal("a delivered task was claimed for delivery")
	}

	// Cancel: another chat's id is not found; a queued task is canceled and
	// never claimed; an ended task is returned unchanged.
	if _, err := ts.CancelTask(ctx, ids[1], other, now); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("cancel from another chat: %v", err)
	}
	if _, err := ts.CancelTask(ctx, "t999999", chat, now); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("cancel unknown: %v", err)
	}
	before, err := ts.CancelTask(ctx, ids[1], chat, now.Add(2*time.Second))
	mustNo(t, err)
	if before.State != memory.TaskQueued {
		t.Fatalf("cancel returned %+v", before)
	}
	if again, err := ts.CancelTask(ctx, c.ID, chat, now); err != nil || again.State != memory.TaskDone {
		t.Fatalf("cancel of a done task: %+v %v", again, err)
	}
	// A running task canceled: its runner's renew and finish are refused.
	r, ok, err := ts.ClaimTask(ctx, memory.TaskClaim{Owner: "r1", Now: now, TTL: lease})
	mustNo(t, err)
	if !ok || r.ID != ids[2] {
		t.Fatalf("claim after cancel took %+v (ok %v), want %s", r, ok, ids[2])
	}
	_, err = ts.CancelTask(ctx, r.ID, "", now)
	mustNo(t, err)
	if err := ts.RenewTask(ctx, r.ID, "r1", now.Add(time.Minute)); !errors.Is(err, memory.ErrTaskLost) {
		t.Fatalf("renew of a canceled task: %v", err)
	}
	if err := ts.FinishTask(ctx, r.ID, "r1", done, now, now); !errors.Is(err, memory.ErrTaskLost) {
		t.Fatalf("finish of a canceled task: %v", err)
	}
	if n, _ := ts.CountTasks(ctx); n != (memory.TaskCounts{Queued: 1}) {
		t.Fatalf("counts after cancels: %+v", n)
	}

	// Reopen keeps everything; new ids do not repeat old ones.
	mustNo(t, s.Close())
	s2 := h.openAt(t, dir, TestOptions(clk))
	ts2 := tasksOf(t, s2)
	got2, err := ts2.GetTask(ctx, c.ID)
	mustNo(t, err)
	if got2.State != memory.TaskDone || !got2.Delivered || got2.Result != "the answer" {
		t.Fatalf("after reopen: %+v", got2)
	}
	if g, err := ts2.GetTask(ctx, ids[1]); err != nil || g.State != memory.TaskCanceled {
		t.Fatalf("canceled after reopen: %+v %v", g, err)
	}
	n, err := ts2.CreateTask(ctx, newTask(chat, "new"), 3, now)
	mustNo(t, err)
	for _, id := range append(ids, o.ID) {
		if n.ID == id {
			t.Fatalf("id %s reused after reopen", id)
		}
	}
}

// testTasksLeaseTakeover: a runner that died leaves its task running; once
// its lease expired another claims it (attempt 2), the dead one's finish is
// refused, and a finished task whose runner died before delivering is
// claimed for delivery once.
func (h harness) testTasksLeaseTakeover(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := h.openTest(t)
	ts := tasksOf(t, s)
	now := clk.Now()
	lease := 15 * time.Second
	task, err := ts.CreateTask(ctx, newTask("slack:C1", "x"), 0, now)
	mustNo(t, err)
	if _, ok, _ := ts.ClaimTask(ctx, memory.TaskClaim{Owner: "dead", Now: now, TTL: lease}); !ok {
		t.Fatal("first claim failed")
	}
	if _, ok, _ := ts.ClaimTask(ctx, memory.TaskClaim{Owner: "b", Now: now.Add(lease - time.Second), TTL: lease}); ok {
		t.Fatal("a live lease was taken over")
	}
	later := now.Add(lease + time.Second)
	c, ok, err := ts.ClaimTask(ctx, memory.TaskClaim{Owner: "b", Now: later, TTL: lease})
	mustNo(t, err)
	if !ok || c.ID != task.ID || c.Attempts != 2 || c.Owner != "b" {
		t.Fatalf("takeover: ok=%v %+v", ok, c)
	}
	if err := ts.FinishTask(ctx, task.ID, "dead", memory.TaskOutcome{State: memory.TaskDone, Result: "late"}, later, later); !errors.Is(err, memory.ErrTaskLost) {
		t.Fatalf("the dead runner's finish: %v", err)
	}
	// Takeover (bolt's restart): a running task of another owner is claimed
	// at once, whatever its lease.
	c3, ok, err := ts.ClaimTask(ctx, memory.TaskClaim{Owner: "c", Now: later, TTL: lease, Takeover: true})
	mustNo(t, err)
	if !ok || c3.ID != task.ID || c3.Attempts != 3 {
		t.Fatalf("takeover claim: ok=%v %+v", ok, c3)
	}
	mustNo(t, ts.FinishTask(ctx, task.ID, "c", memory.TaskOutcome{State: memory.TaskFailed, Error: "boom"}, later, later.Add(lease)))
	// c dies before delivering: after its lease, d claims the delivery, once.
	if _, ok, _ := ts.ClaimTaskDelivery(ctx, memory.TaskClaim{Owner: "d", Now: later, TTL: lease}); ok {
		t.Fatal("delivery claimed under a live lease")
	}
	at := later.Add(lease + time.Second)
	d, ok, err := ts.ClaimTaskDelivery(ctx, memory.TaskClaim{Owner: "d", Now: at, TTL: lease})
	mustNo(t, err)
	if !ok || d.ID != task.ID || d.State != memory.TaskFailed || d.Error != "boom" || d.Owner != "d" {
		t.Fatalf("delivery claim: ok=%v %+v", ok, d)
	}
	if _, ok, _ := ts.ClaimTaskDelivery(ctx, memory.TaskClaim{Owner: "e", Now: at, TTL: lease}); ok {
		t.Fatal("delivery claimed twice")
	}
	if err := ts.MarkTaskDelivered(ctx, task.ID, "c"); !errors.Is(err, memory.ErrTaskLost) {
		t.Fatalf("the dead runner marks delivered: %v", err)
	}
	mustNo(t, ts.MarkTaskDelivered(ctx, task.ID, "d"))
}

// testTasksClaimExclusive: many runners claiming at once never get the same
// task, and MaxRunning bounds the running tasks with a live lease.
func (h harness) testTasksClaimExclusive(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := h.openTest(t)
	ts := tasksOf(t, s)
	now := clk.Now()
	const tasks, runners = 12, 6
	for i := range tasks {
		_, err := ts.CreateTask(ctx, newTask(fmt.Sprint("chat:", i), "x"), 1, now)
		mustNo(t, err)
	}
	var mu sync.Mutex
	claimed := map[string]string{}
	var wg sync.WaitGroup
	errs := make(chan error, runners)
	for r := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprint("r", r)
			for {
				c, ok, err := ts.ClaimTask(ctx, memory.TaskClaim{Owner: owner, Now: now, TTL: time.Hour, MaxRunning: 10})
				if err != nil {
					errs <- err
					return
				}
				if !ok {
					return
				}
				mu.Lock()
				if prev, dup := claimed[c.ID]; dup {
					errs <- fmt.Errorf("task %s claimed by %s and %s", c.ID, prev, owner)
				}
				claimed[c.ID] = owner
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(claimed) != 10 {
		t.Fatalf("%d tasks claimed, want MaxRunning = 10", len(claimed))
	}
	if n, _ := ts.CountTasks(ctx); n != (memory.TaskCounts{Queued: 2, Running: 10}) {
		t.Fatalf("counts: %+v", n)
	}
}
