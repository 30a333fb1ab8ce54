package chaos

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/loadtest"
)

// TestReplicaThroughput (issue 18, BENCHMARKS.md) measures turns/s with the
// model delayed 500 ms through 1, 2 and 3 replicas on one PostgreSQL
// database: 300 chats (100 per platform) talk closed-loop for 15 s. It is a
// measurement, not a check: it runs only with SWITCHBOARD_REPLICA_BENCH=1.
//
//	SWITCHBOARD_REPLICA_BENCH=1 go test ./internal/chaos/ -run TestReplicaThroughput -v -timeout 10m
func TestReplicaThroughput(t *testing.T) {
	if os.Getenv("SWITCHBOARD_REPLICA_BENCH") == "" {
		t.Skip("a measurement: set SWITCHBOARD_REPLICA_BENCH=1 to run it")
	}
	const chats, period = 300, 15 * time.Second
	for _, n := range []int{1, 2, 3} {
		s := newReplicaSet(t, n, loadtest.ModelOptions{Delay: 500 * time.Millisecond})
		for i := range n {
			s.start(i)
		}
		ctx, cancel := context.WithTimeout(context.Background(), period)
		var answered atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for c := range chats {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := 0; ctx.Err() == nil; seq++ {
					tok := loadtest.Token(c, seq)
					ch := s.r.p.Expect(tok)
					s.r.p.Say(c, tok)
					select {
					case <-ch:
						answered.Add(1)
					case <-ctx.Done():
						return
					}
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		cancel()
		t.Logf("%d replica(s): %d turns in %v = %.1f turns/s (model delay 500 ms, %d chats, max_concurrent_turns 64 each)",
			n, answered.Load(), elapsed.Round(time.Millisecond), float64(answered.Load())/elapsed.Seconds(), chats)
		for _, p := range s.procs() {
			_ = p.Stop(5 * time.Second)
		}
	}
}
