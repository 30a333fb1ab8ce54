package daemon

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/retry"
)

// supervisor runs one channel and restarts it with backoff when Run fails,
// so one channel's crash never stops the others. A run that lasted longer
// than resetAfter resets the backoff.
type supervisor struct {
	ch         channels.Channel
	sink       channels.Sink
	log        *slog.Logger
	base, max  time.Duration
	resetAfter time.Duration
	// runFn, if set, replaces ch.Run; health, if set, replaces the
	// channel's readiness: ready, or standby (waiting for a lease another
	// replica holds, which leaves this replica ready). cluster.go sets them.
	runFn  func(ctx context.Context, sink channels.Sink) error
	health func() (ready, standby bool)

	mu       sync.Mutex
	running  bool
	restarts int
	lastErr  error
	errAt    time.Time // when lastErr happened
	cancel   context.CancelFunc
	done     chan struct{}
}

type supervisorState struct {
	Running   bool
	Ready     bool
	Standby   bool // another replica runs it (its lease); Ready too
	Restarts  int
	LastErr   string
	LastErrAt time.Time // when the channel last failed (zero: never)
}

func newSupervisor(ch channels.Channel, sink channels.Sink, log *slog.Logger, base, max time.Duration) *supervisor {
	if base <= 0 {
		base = time.Second
	}
	if max <= 0 {
		max = time.Minute
	}
	return &supervisor{ch: ch, sink: sink, log: log.With("channel", ch.Name()), base: base, max: max,
		resetAfter: time.Minute}
}

// start launches the run loop; stop ends it.
func (s *supervisor) start(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	s.mu.Lock()
	s.cancel = cancel
	s.done = make(chan struct{})
	done := s.done
	s.mu.Unlock()
	go func() {
		defer close(done)
		s.loop(ctx)
	}()
}

// stop cancels the channel and waits for its Run to return; idempotent.
func (s *supervisor) stop() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

func (s *supervisor) loop(ctx context.Context) {
	delay := s.base
	for {
		started := time.Now()
		s.setRunning(true, nil)
		err := s.run(ctx)
		s.setRunning(false, err)
		if ctx.Err() != nil {
			return
		}
		if time.Since(started) > s.resetAfter {
			delay = s.base
		}
		if err != nil {
			s.log.Error("channel stopped; restarting", "err", err, "in", delay)
		} else {
			s.log.Warn("channel returned; restarting", "in", delay)
		}
		if retry.Sleep(ctx, delay) != nil {
			return
		}
		delay = min(delay*2, s.max)
		s.mu.Lock()
		s.restarts++
		s.mu.Unlock()
	}
}

// run calls Run, turning a panic into an error so the supervisor restarts it.
func (s *supervisor) run(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r}
		}
	}()
	if s.runFn != nil {
		return s.runFn(ctx, s.sink)
	}
	return s.ch.Run(ctx, s.sink)
}

func (s *supervisor) setRunning(running bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = running
	if err != nil {
		s.lastErr, s.errAt = err, time.Now()
	}
}

func (s *supervisor) state() supervisorState {
	s.mu.Lock()
	st := supervisorState{Running: s.running, Restarts: s.restarts}
	if s.lastErr != nil {
		st.LastErr, st.LastErrAt = s.lastErr.Error(), s.errAt
	}
	s.mu.Unlock()
	st.Ready = st.Running
	if s.health != nil {
		ready, standby := s.health()
		st.Standby = st.Running && standby
		st.Ready = st.Running && (ready || standby)
	} else if r, ok := s.ch.(channels.Readiness); ok {
		st.Ready = st.Running && r.Ready()
	}
	return st
}

type panicError struct{ value any }

func (p *panicError) Error() string { return "channel panicked: " + fmtAny(p.value) }
