package lanes

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// alive is the number of worker goroutines the pool has.
func (l *Lanes) alive() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.workers
}

// waitIdle waits (hang guard only) until the pool has no worker left.
func waitIdle(t *testing.T, l *Lanes) {
	t.Helper()
	deadline := time.Now().Add(hangWait)
	for l.alive() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d workers still alive with no work", l.alive())
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// An idle daemon's intake holds no goroutines (issue 19): workers start with
// work, never exceed Workers, and end when no lane is ready.
func TestLanesWorkersStartWithWorkAndEndWithout(t *testing.T) {
	tests := []struct {
		workers, keys int
	}{
		{workers: 1, keys: 5},
		{workers: 4, keys: 2},
		{workers: 4, keys: 40},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d workers %d keys", tt.workers, tt.keys), func(t *testing.T) {
			l := New(Options{Workers: tt.workers})
			defer l.Close()
			if n := l.alive(); n != 0 {
				t.Fatalf("a new pool has %d workers, want 0", n)
			}
			for round := range 2 { // the second round needs workers again
				release := make(chan struct{})
				var mu sync.Mutex
				running, peak := 0, 0
				var wg sync.WaitGroup
				for k := range tt.keys {
					for range 3 {
						wg.Add(1)
						err := l.TrySubmit(fmt.Sprint("chat", k), func() {
							defer wg.Done()
							mu.Lock()
							running++
							peak = max(peak, running)
							mu.Unlock()
							<-release
							mu.Lock()
							running--
							mu.Unlock()
						})
						if err != nil {
							t.Fatal(err)
						}
					}
				}
				if n := l.alive(); n > tt.workers || n == 0 {
					t.Fatalf("round %d: %d workers alive with work queued, want 1..%d", round, n, tt.workers)
				}
				close(release)
				wg.Wait()
				if want := min(tt.workers, tt.keys); peak > want {
					t.Fatalf("round %d: %d jobs ran at once, want at most %d", round, peak, want)
				}
				waitIdle(t, l)
			}
		})
	}
}
