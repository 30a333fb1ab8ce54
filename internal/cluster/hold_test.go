package cluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// events is an ordered log shared by goroutines.
type events struct {
	mu  sync.Mutex
	log []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = append(e.log, s)
}

func (e *events) index(s string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, v := range e.log {
		if v == s {
			return i
		}
	}
	return -1
}

// runHold runs c.Hold(name) until the returned stop is called (which
// waits for Hold to return).
func runHold(c *Cluster, name string, work func(context.Context, int64)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Hold(ctx, name, work)
	}()
	return func() {
		cancel()
		<-done
	}
}

func TestHoldCancelsWorkBeforeTheLeaseCanBeTakenOver(t *testing.T) {
	cs := open(t, 2, testTTL)
	a, b := cs[0], cs[1]
	ctx := ctxT(t)
	var ev events
	started := make(chan int64, 1)
	stop := runHold(a, "telegram-poll", func(ctx context.Context, token int64) {
		started <- token
		<-ctx.Done()
		ev.add("a stopped")
	})
	defer stop()
	var tokA int64
	select {
	case tokA = <-started:
	case <-ctx.Done():
		t.Fatal("a never acquired")
	}
	// a's renewals now fail (as if its database connection were cut); b
	// polls as fast as it can.
	fault := func(string) error { return errInjected }
	a.renewFault.Store(&fault)
	cut := time.Now()
	// b polls every 20 ms; the worst lateness of a poll step (its pause and
	// its query, the first right away) measures how much slower than asked
	// the machine runs meanwhile.
	const step = 20 * time.Millisecond
	var tokB int64
	var lag time.Duration
	for at, pause := cut, time.Duration(0); ; at, pause = time.Now(), step {
		time.Sleep(pause)
		tok, ok, err := b.TryAcquire(ctx, "telegram-poll")
		lag = max(lag, time.Since(at)-pause)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			tokB = tok
			ev.add("b acquired")
			break
		}
		if time.Since(cut) > waitHang {
			t.Fatalf("b did not take over within %s", waitHang)
		}
	}
	took := time.Since(cut)
	t.Logf("lease taken over %s after the holder's renewals stopped (poll lag %s, ttl %s)",
		took.Round(time.Millisecond), lag.Round(time.Millisecond), testTTL)
	// ttl + 2s on a machine that keeps up; on a loaded one the holder's
	// renew and expiry steps are late by about as much as b's poll step,
	// so the bound grows by five times its worst lateness (as in
	// internal/chaos's replica test). A lease left to a full extra TTL
	// still shows.
	if bound := testTTL + 2*time.Second + 5*lag; took > bound {
		t.Errorf("takeover took %s, want within ttl + 2s + 5 × the poll lag measured meanwhile (%s) = %s", took, lag, bound)
	}
	ia, ib := ev.index("a stopped"), ev.index("b acquired")
	if ia < 0 || ia > ib {
		t.Fatalf("events %v: a's work must stop before b can acquire", ev.log)
	}
	if tokB <= tokA {
		t.Fatalf("b's token %d, want > a's %d", tokB, tokA)
	}
}

func TestHoldRunsOneHolderAtATimeAndHandsOver(t *testing.T) {
	cs := open(t, 3, testTTL)
	var active, maxActive atomic.Int32
	var mu sync.Mutex
	var tokens []int64
	holders := make(chan int, 10)
	stops := make([]func(), len(cs))
	for i, c := range cs {
		stops[i] = runHold(c, "scheduler", func(ctx context.Context, token int64) {
			n := active.Add(1)
			for {
				m := maxActive.Load()
				if n <= m || maxActive.CompareAndSwap(m, n) {
					break
				}
			}
			mu.Lock()
			tokens = append(tokens, token)
			mu.Unlock()
			holders <- i
			<-ctx.Done()
			active.Add(-1)
		})
	}
	// Stop each holder in turn: another replica must take over (on the
	// release's NOTIFY or the next poll).
	stopped := map[int]bool{}
	for range len(cs) - 1 {
		var h int
		select {
		case h = <-holders:
		case <-time.After(waitHang):
			t.Fatal("no replica took the lease")
		}
		if stopped[h] {
			t.Fatalf("stopped replica %d holds the lease", h+1)
		}
		stops[h]()
		stopped[h] = true
	}
	select {
	case h := <-holders:
		if stopped[h] {
			t.Fatalf("stopped replica %d holds the lease", h+1)
		}
	case <-time.After(waitHang):
		t.Fatal("the last replica never took the lease")
	}
	for i, s := range stops {
		if !stopped[i] {
			s()
		}
	}
	if m := maxActive.Load(); m != 1 {
		t.Fatalf("%d holders ran at once, want 1", m)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("tokens %v do not increase with each new holder", tokens)
		}
	}
}

func TestHoldRetriesWorkThatReturns(t *testing.T) {
	cs := open(t, 1, testTTL)
	var runs atomic.Int32
	again := make(chan struct{})
	stop := runHold(cs[0], "discord-shard-0", func(ctx context.Context, token int64) {
		if runs.Add(1) == 3 {
			close(again)
		}
	})
	defer stop()
	select {
	case <-again:
	case <-time.After(waitHang):
		t.Fatalf("work ran %d times, want Hold to run it again after it returns", runs.Load())
	}
}

func TestStatusListsReplicasAndLeases(t *testing.T) {
	cs := open(t, 2, time.Minute)
	ctx := ctxT(t)
	tok := mustAcquire(t, cs[1], "scheduler")
	st, err := cs[0].Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.AliveReplicas() != 2 || st.Replicas[0].ID != "r1" || st.Replicas[1].ID != "r2" {
		t.Fatalf("replicas = %+v, want r1 and r2 alive", st.Replicas)
	}
	if len(st.Leases) != 1 || st.Leases[0].Holder != "r2" || st.Leases[0].Token != tok || !st.Leases[0].Held {
		t.Fatalf("leases = %+v, want scheduler held by r2", st.Leases)
	}
	if err := cs[1].Release(ctx, "scheduler", tok); err != nil {
		t.Fatal(err)
	}
	cs[1].Close()
	st, err = cs[0].Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Replicas) != 1 || st.Replicas[0].ID != "r1" {
		t.Fatalf("after r2 closed: replicas = %+v, want only r1", st.Replicas)
	}
	if st.Leases[0].Held || st.Leases[0].Holder != "" {
		t.Fatalf("after release: lease = %+v, want free", st.Leases[0])
	}
	// Per-session claims are listed while held only (one row per chat ever).
	done := mustAcquire(t, cs[0], "session:telegram:1")
	if err := cs[0].Release(ctx, "session:telegram:1", done); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, cs[0], "session:telegram:2")
	st, err = cs[0].Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range st.Leases {
		names = append(names, l.Name)
	}
	if fmt.Sprint(names) != "[scheduler session:telegram:2]" {
		t.Fatalf("leases listed %v, want the scheduler and the held session claim", names)
	}
}

func TestListenReceivesNotify(t *testing.T) {
	cs := open(t, 2, time.Minute)
	ctx, cancel := context.WithCancel(ctxT(t))
	got := make(chan string, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cs[0].Listen(ctx, "switchboard_inbox", func(p string) { got <- p })
	}()
	defer func() { cancel(); <-done }()
	// The listener may not be connected yet: notify until it hears.
	waitFor(t, "a notification", func() bool {
		if err := cs[1].Notify(ctx, "switchboard_inbox", "telegram:42"); err != nil {
			t.Fatal(err)
		}
		select {
		case p := <-got:
			if p != "telegram:42" {
				t.Fatalf("payload %q", p)
			}
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	})
}
