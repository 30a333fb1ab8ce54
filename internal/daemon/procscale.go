package daemon

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// procScaler moves GOMAXPROCS between Procs.Busy and Procs.Idle: down when
// the daemon hands memory back at idle (pagetrim.go), up with the next
// message (the hub's MessageIn). A message that arrives while the count is
// being lowered is served with Go's count; the next one raises it. The zero
// Procs (the operator set GOMAXPROCS) leaves the count alone.
type procScaler struct {
	procs   Procs
	mu      sync.Mutex // orders the transitions
	lowered atomic.Bool
}

func (p *procScaler) managed() bool { return p != nil && p.procs.Busy > 0 && p.procs.Idle > 0 }

// idle lowers the count to Procs.Idle.
func (p *procScaler) idle() {
	if !p.managed() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.lowered.Load() {
		runtime.GOMAXPROCS(p.procs.Idle)
		p.lowered.Store(true)
	}
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
