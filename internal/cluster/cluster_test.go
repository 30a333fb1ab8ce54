package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testTTL is short so takeovers happen within a test's patience.
const testTTL = 600 * time.Millisecond

// waitHang bounds a wait for something a test caused (a takeover, a
// notification): a hang detector, not a performance bound. Each takes well
// under a second on a quiet machine, a few on a loaded one.
const waitHang = time.Minute

// open opens n replicas on one fresh database, closed when t ends.
func open(t *testing.T, n int, ttl time.Duration) []*Cluster {
	t.Helper()
	url := pgtest.Start(t)
	cs := make([]*Cluster, n)
	for i := range cs {
		c, err := Open(context.Background(), url, Options{
			ReplicaID: fmt.Sprintf("r%d", i+1), LeaseTTL: ttl,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatalf("open replica %d: %v", i+1, err)
		}
		t.Cleanup(c.Close)
		cs[i] = c
	}
	return cs
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*waitHang)
	t.Cleanup(cancel)
	return ctx
}

func TestConcurrentTryAcquireIsMutuallyExclusive(t *testing.T) {
	cs := open(t, 2, time.Minute)
	ctx := ctxT(t)
	for round := range 25 {
		name := fmt.Sprintf("lease-%d", round)
		var wg sync.WaitGroup
		oks := make([]bool, len(cs))
		errs := make([]error, len(cs))
		for i, c := range cs {
			wg.Go(func() { _, oks[i], errs[i] = c.TryAcquire(ctx, name) })
		}
		wg.Wait()
		winners := 0
		for i := range cs {
			if errs[i] != nil {
				t.Fatalf("round %d replica %d: %v", round, i+1, errs[i])
			}
			if oks[i] {
				winners++
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d replicas acquired %s, want exactly 1", round, winners, name)
		}
	}
}

func TestTokens(t *testing.T) {
	cs := open(t, 2, testTTL)
	a, b := cs[0], cs[1]
	ctx := ctxT(t)
	t1 := mustAcquire(t, a, "x")
	if again := mustAcquire(t, a, "x"); again != t1 {
		t.Fatalf("live holder re-acquiring: token %d, want it kept (%d)", again, t1)
	}
	if _, ok, err := b.TryAcquire(ctx, "x"); err != nil || ok {
		t.Fatalf("second replica acquired a live lease: ok=%v err=%v", ok, err)
	}
	if err := a.Release(ctx, "x", t1); err != nil {
		t.Fatal(err)
	}
	t2 := mustAcquire(t, b, "x")
	if t2 <= t1 {
		t.Fatalf("token after release and takeover = %d, want > %d", t2, t1)
	}
	if ok, _ := a.Valid(ctx, "x", t1); ok {
		t.Fatal("released holder's token still valid")
	}
	if ok, _ := a.Renew(ctx, "x", t1); ok {
		t.Fatal("released holder renewed")
	}
	if err := a.Release(ctx, "x", t1); err != nil {
		t.Fatalf("stale release: %v", err)
	}
	if ok, _ := b.Valid(ctx, "x", t2); !ok {
		t.Fatal("a stale release freed the new holder's lease")
	}
}

func TestTakeoverAfterExpiry(t *testing.T) {
	cs := open(t, 2, testTTL)
	a, b := cs[0], cs[1]
	ctx := ctxT(t)
	t1 := mustAcquire(t, a, "poll")
	if ok, err := a.Valid(ctx, "poll", t1); err != nil || !ok {
		t.Fatalf("holder's own token: ok=%v err=%v", ok, err)
	}
	// a stops renewing; b polls until the database lets it in.
	var t2 int64
	waitFor(t, "takeover after expiry", func() bool {
		tok, ok, err := b.TryAcquire(ctx, "poll")
		if err != nil {
			t.Fatal(err)
		}
		t2 = tok
		return ok
	})
	if t2 <= t1 {
		t.Fatalf("takeover token %d, want > %d", t2, t1)
	}
	if ok, _ := a.Valid(ctx, "poll", t1); ok {
		t.Fatal("stale holder's Valid is true after takeover")
	}
	if ok, _ := a.Renew(ctx, "poll", t1); ok {
		t.Fatal("stale holder renewed after takeover")
	}
	if _, ok, _ := a.TryAcquire(ctx, "poll"); ok {
		t.Fatal("stale holder took the lease back while the new holder is live")
	}
}

func TestFireExactlyOnceAcrossReplicas(t *testing.T) {
	cs := open(t, 3, time.Minute)
	ctx := ctxT(t)
	base := time.Date(2025, 3, 30, 1, 0, 0, 0, time.UTC)
	const slots = 40
	var mu sync.Mutex
	fired := map[time.Time]int{}
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			for i := range slots {
				slot := base.Add(time.Duration(i) * time.Minute)
				ok, err := c.Fire(ctx, "daily-report", slot)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					fired[slot]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(fired) != slots {
		t.Fatalf("%d slots fired, want %d", len(fired), slots)
	}
	for slot, n := range fired {
		if n != 1 {
			t.Fatalf("slot %s fired %d times", slot, n)
		}
	}
	// Another job's identical slot is its own.
	if ok, err := cs[0].Fire(ctx, "reminder", base); err != nil || !ok {
		t.Fatalf("other job, same slot: ok=%v err=%v", ok, err)
	}
}

func mustAcquire(t *testing.T, c *Cluster, name string) int64 {
	t.Helper()
	tok, ok, err := c.TryAcquire(context.Background(), name)
	if err != nil || !ok {
		t.Fatalf("%s acquire %s: ok=%v err=%v", c.ReplicaID(), name, ok, err)
	}
	return tok
}

// waitFor polls cond every 20ms until it holds; it fails the test after
// waitHang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitHang)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", waitHang, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var errInjected = errors.New("injected renew failure")
