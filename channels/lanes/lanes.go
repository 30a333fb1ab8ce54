// Package lanes runs an adapter's intake in parallel across chats while
// keeping each chat's messages in order: a bounded map of per-key FIFO queues
// ("lanes") served by a bounded pool of worker goroutines. Jobs of one key run
// one at a time, in submission order; jobs of different keys run concurrently
// on at most Workers goroutines. Ready lanes are served round-robin, so one
// busy chat cannot starve the others. Workers are started when work arrives
// and end when no lane is ready, so an idle pool holds no goroutine (and no
// stack).
//
// Everything is bounded: at most MaxLanes keys have queued or running jobs and
// at most Depth jobs wait per key. A submission beyond those bounds is refused
// (ErrLaneFull, ErrTooManyLanes) and the caller applies its platform's
// backpressure (Slack: leave the envelope unacknowledged so Slack redelivers;
// Discord: mark the channel behind and catch it up from history). For a full
// lane, Options.OnOverflow (if set) runs in that lane once its backlog is
// done, so the caller can recover the refused work in order.
//
// Close stops the pool: queued jobs are abandoned (never started), running
// jobs are waited for. Callers must therefore acknowledge work to the platform
// only from inside the job, after it succeeded.
//
// The package imports nothing of the project; it is shared by the Discord and
// Slack adapters and KeyedMutex serves Slack's HTTP mode.
package lanes

import (
	"errors"
	"sync"
)

// Defaults for zero Options fields.
const (
	DefaultWorkers  = 8
	DefaultDepth    = 64
	DefaultMaxLanes = 1024
)

// Errors TrySubmit returns.
var (
	// ErrLaneFull: the key already has Depth jobs waiting.
	ErrLaneFull = errors.New("lanes: the chat's intake queue is full")
	// ErrTooManyLanes: MaxLanes other keys have work; the key has none.
	ErrTooManyLanes = errors.New("lanes: too many chats with queued messages")
	// ErrClosed: Close was called.
	ErrClosed = errors.New("lanes: closed")
)

// Options bounds the pool. Zero fields take the defaults.
type Options struct {
	// Workers bounds the goroutines running jobs (DefaultWorkers).
	Workers int
	// Depth is the number of jobs that may wait per key (DefaultDepth).
	Depth int
	// MaxLanes is the number of keys that may have queued or running jobs at
	// once (DefaultMaxLanes).
	MaxLanes int
	// OnOverflow, if set, runs in a key's lane (after the jobs queued before
	// it) when TrySubmit refused a job of that key with ErrLaneFull; refusals
	// before it runs are coalesced into one call.
	OnOverflow func(key string)
}

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Depth <= 0 {
		o.Depth = DefaultDepth
	}
	if o.MaxLanes <= 0 {
		o.MaxLanes = DefaultMaxLanes
	}
	return o
}

// Lanes is the pool. Build it with New; it is safe for concurrent use.
type Lanes struct {
	opts    Options
	mu      sync.Mutex
	lanes   map[string]*lane
	ready   []string // keys with work that no worker is running, FIFO
	workers int      // worker goroutines alive; > 0 whenever ready is not empty
	closed  bool
	wg      sync.WaitGroup
}

// lane is one key's queue. It is in Lanes.ready exactly when it has work
// (jobs or overflow) and is not running.
type lane struct {
	jobs     []func()
	running  bool
	overflow bool
}

// New returns an empty pool; workers start with the first job.
func New(opts Options) *Lanes {
	return &Lanes{opts: opts.withDefaults(), lanes: map[string]*lane{}}
}

// markReady puts key in the ready queue and starts a worker if fewer than
// Workers are alive (the ones alive take ready lanes before they end).
// l.mu is held.
func (l *Lanes) markReady(key string) {
	l.ready = append(l.ready, key)
	if l.workers < l.opts.Workers {
		l.workers++
		l.wg.Add(1)
		go l.worker()
	}
}

// TrySubmit queues job in key's lane without blocking. It returns nil when
// the job will run (unless Close comes first), or ErrLaneFull,
// ErrTooManyLanes or ErrClosed when it will not.
func (l *Lanes) TrySubmit(key string, job func()) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	ln, ok := l.lanes[key]
	if !ok {
		if len(l.lanes) >= l.opts.MaxLanes {
			return ErrTooManyLanes
		}
		ln = &lane{}
		l.lanes[key] = ln
		l.markReady(key)
	}
	if len(ln.jobs) >= l.opts.Depth {
		if l.opts.OnOverflow != nil {
			ln.overflow = true
		}
		return ErrLaneFull
	}
	ln.jobs = append(ln.jobs, job)
	return nil
}

// Stats reports the keys with work and the jobs waiting (not running).
func (l *Lanes) Stats() (lanes, queued int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ln := range l.lanes {
		queued += len(ln.jobs)
	}
	return len(l.lanes), queued
}

// Close refuses new jobs, abandons the queued ones and waits for the running
// ones to return. It returns the number of jobs abandoned. Calling it again
// is harmless.
func (l *Lanes) Close() (abandoned int) {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		for key, ln := range l.lanes {
			abandoned += len(ln.jobs)
			ln.jobs, ln.overflow = nil, false
			if !ln.running {
				delete(l.lanes, key)
			}
		}
		l.ready = nil
	}
	l.mu.Unlock()
	l.wg.Wait()
	return abandoned
}

// next takes the next ready lane's next job and marks the lane running. When
// no lane is ready or the pool is closed it returns ok false and counts the
// calling worker out: the worker ends.
func (l *Lanes) next() (key string, ln *lane, job func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ready) == 0 || l.closed {
		l.workers--
		return "", nil, nil, false
	}
	key = l.ready[0]
	l.ready[0] = ""
	l.ready = l.ready[1:]
	if len(l.ready) == 0 {
		l.ready = nil // let the backing array go
	}
	ln = l.lanes[key]
	ln.running = true
	if len(ln.jobs) > 0 {
		job = ln.jobs[0]
		ln.jobs[0] = nil
		ln.jobs = ln.jobs[1:]
	} else {
		ln.overflow = false
		overflow := l.opts.OnOverflow
		job = func() { overflow(key) }
	}
	return key, ln, job, true
}

// done returns a lane after one of its jobs ran: back to the ready queue if
// it has more work, out of the map otherwise.
func (l *Lanes) done(key string, ln *lane) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln.running = false
	if l.closed {
		delete(l.lanes, key)
		return
	}
	if len(ln.jobs) > 0 || ln.overflow {
		l.ready = append(l.ready, key) // the calling worker goes on to next
		return
	}
	delete(l.lanes, key)
}

func (l *Lanes) worker() {
	defer l.wg.Done()
	for {
		key, ln, job, ok := l.next()
		if !ok {
			return
		}
		job()
		l.done(key, ln)
	}
}

// KeyedMutex serializes callers per key (Slack's HTTP mode: one chat's
// events one at a time, different chats in parallel). Its map holds only
// keys that are locked or waited for. The zero value is ready to use.
type KeyedMutex struct {
	mu   sync.Mutex
	keys map[string]*keyed
}

type keyed struct {
	sync.Mutex
	refs int
}

// Lock locks key and returns the function that unlocks it.
func (k *KeyedMutex) Lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.keys == nil {
		k.keys = map[string]*keyed{}
	}
	e, ok := k.keys[key]
	if !ok {
		e = &keyed{}
		k.keys[key] = e
	}
	e.refs++
	k.mu.Unlock()
	e.Lock()
	var once sync.Once
	return func() {
		once.Do(func() {
			e.Unlock()
			k.mu.Lock()
			e.refs--
			if e.refs == 0 {
				delete(k.keys, key)
			}
			k.mu.Unlock()
		})
	}
}

// Len is the number of keys locked or waited for.
func (k *KeyedMutex) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.keys)
}
