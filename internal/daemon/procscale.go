package daemon

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// procScaler moves GOMAXPROCS between Procs.Busy and Procs.Idle: down when
// the daemon hands memory back at idle (pagetrim.go), up with the next
// message (the hub's MessageIn) or finished turn (TurnDone). The zero Procs (the operator set
// GOMAXPROCS) leaves the count alone.
type procScaler struct {
	procs   Procs
	mu      sync.Mutex // orders the transitions
	lowered atomic.Bool
}

func (p *procScaler) managed() bool { return p != nil && p.procs.Busy > 0 && p.procs.Idle > 0 }

// idle lowers the count to Procs.Idle unless stillIdle (nil: always idle)
// reports that a message came in since the daemon decided it was idle.
// lowered is set before that check: a message counted after it finds the
// scaler lowered and waits to raise the count again, so a message racing
// with the lowering never leaves the daemon at the idle count.
func (p *procScaler) idle(stillIdle func() bool) {
	if !p.managed() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lowered.Load() {
		return
	}
	p.lowered.Store(true)
	if stillIdle != nil && !stillIdle() {
		p.lowered.Store(false)
		return
	}
	runtime.GOMAXPROCS(p.procs.Idle)
}

// busy raises the count to Procs.Busy after idle; one atomic load otherwise.
func (p *procScaler) busy() {
	if p == nil || !p.lowered.Load() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lowered.Load() {
		runtime.GOMAXPROCS(p.procs.Busy)
		p.lowered.Store(false)
	}
}
