package bolt

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-bot/switchboard/memory"

	bbolt "go.etcd.io/bbolt"
)

// groupCommit is the Options.GroupCommit write path: a writer that finds no
// commit running starts one at once (no batch window to wait out); writers
// arriving while a commit runs are committed together in the next
// transaction, so concurrent sessions still share one fsync. Like bolt's
// DB.Batch, a function may run more than once: when one fails, the combined
// transaction is rolled back, the failing function runs alone to return its
// own error, and the others are committed again without it.
// gcLinger is how long the commit loop waits for more writers after a
// commit that carried several.
const gcLinger = time.Millisecond

type groupCommit struct {
	mu      sync.Mutex
	pending []*gcCall
	running bool
}

// gcCall is one writer's function and, once answered, its result. A call
// is answered once; later answers (a fault after it was answered) are
// dropped.
type gcCall struct {
	fn       func(*bbolt.Tx) error
	err      error
	answered atomic.Bool
	done     sync.WaitGroup
}

func (c *gcCall) answer(err error) {
	if c.answered.CompareAndSwap(false, true) {
		c.err = err
		c.done.Done()
	}
}

func (s *Store) commitGrouped(fn func(*bbolt.Tx) error) error {
	c := &gcCall{fn: fn}
	c.done.Add(1)
	g := &s.gc
	g.mu.Lock()
	g.pending = append(g.pending, c)
	if !g.running {
		g.running = true
		go s.commitLoop() // exits as soon as nothing is pending
	}
	g.mu.Unlock()
	c.done.Wait()
	return c.err
}

func (s *Store) commitLoop() {
	g := &s.gc
	last := 0
	for {
		if last > 1 {
			// Under concurrency, linger briefly so the next commit carries
			// more writers (fewer fsyncs); a lone writer never waits.
			time.Sleep(gcLinger)
		}
		g.mu.Lock()
		calls := g.pending
		g.pending = nil
		if len(calls) == 0 {
			g.running = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		last = len(calls)
		s.commitCallsSafe(calls)
	}
}

// commitCallsSafe runs commitCalls on this goroutine (not the writers') with
// bolt panics and memory faults on a damaged file turned into an error for
// every writer still waiting, so they cannot crash the daemon.
func (s *Store) commitCallsSafe(calls []*gcCall) {
	err := faultSafe("committing", func() error {
		s.commitCalls(calls)
		return nil
	})
	if err == nil {
		return
	}
	err = fmt.Errorf("%w: %w (stop switchboard and run `switchboard doctor`)", memory.ErrInvalidDatabase, err)
	for _, c := range calls {
		c.answer(err) // a writer already answered keeps its result
	}
}

func (s *Store) commitCalls(calls []*gcCall) {
	for len(calls) > 0 {
		failed := -1
		err := s.db.Update(func(tx *bbolt.Tx) error {
			for i, c := range calls {
				if err := safeCall(c.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed < 0 {
			for _, c := range calls {
				c.answer(err)
			}
			return
		}
		c := calls[failed]
		calls = slices.Delete(slices.Clone(calls), failed, failed+1)
		c.answer(s.db.Update(func(tx *bbolt.Tx) error { return safeCall(c.fn, tx) }))
	}
}

func safeCall(fn func(*bbolt.Tx) error, tx *bbolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in a store write: %v", p)
		}
	}()
	return fn(tx)
}
