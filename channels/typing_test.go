package channels

import (
	"context"
	"sync"
	"testing"
	"time"
)

// typingRig records a TypingLoop's calls; Show blocks until released.
type typingRig struct {
	mu      sync.Mutex
	calls   []string
	entered chan struct{}
	release chan struct{}
	flush   chan struct{} // stop began waiting for a call in flight
	fire    chan time.Time
}

func newTypingRig() *typingRig {
	return &typingRig{entered: make(chan struct{}, 8), release: make(chan struct{}), flush: make(chan struct{}, 8), fire: make(chan time.Time)}
}

func (r *typingRig) loop(off bool) TypingLoop {
	l := TypingLoop{Interval: time.Hour,
		After: func(d time.Duration) <-chan time.Time {
			if d == TypingFlush {
				r.flush <- struct{}{}
			}
			return r.fire
		},
		Show: func(ctx context.Context) {
			r.entered <- struct{}{}
			select {
			case <-r.release:
				r.add("show")
			case <-ctx.Done():
				r.add("show cut off")
			}
		},
	}
	if off {
		l.Off = func(context.Context) { r.add("off") }
	}
	return l
}

func (r *typingRig) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, s)
}

func (r *typingRig) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// stop lets a call in flight finish before it returns (then Off), so
// nothing of the indicator reaches the platform after the answer that
// follows; a call that does not finish within TypingFlush is cut off.
func TestTypingLoopStop(t *testing.T) {
	for _, c := range []struct {
		name     string
		off      bool
		hang     bool // the call never finishes: the flush wait fires
		want     []string
		neverRun bool // stop before Delay: nothing at all
	}{
		{name: "call in flight finishes first", want: []string{"show"}},
		{name: "then typing off", off: true, want: []string{"show", "off"}},
		{name: "a hung call is cut off after the flush wait", off: true, hang: true, want: []string{"show cut off", "off"}},
		{name: "stopped before the delay", off: true, neverRun: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newTypingRig()
			l := r.loop(c.off)
			if c.neverRun {
				l.Delay = time.Hour
			}
			stop := l.Start(context.Background())
			if c.neverRun {
				stop()
				if got := r.got(); len(got) != 0 {
					t.Fatalf("calls %v, want none", got)
				}
				return
			}
			<-r.entered
			stopped := make(chan struct{})
			go func() { stop(); close(stopped) }()
			select {
			case <-r.flush:
			case <-stopped:
				t.Fatal("stop returned while a call was in flight")
			}
			if c.hang {
				r.fire <- time.Time{}
			} else {
				close(r.release)
			}
			<-stopped
			stop() // idempotent
			if got := r.got(); len(got) != len(c.want) || (len(got) > 0 && got[0] != c.want[0]) || (len(got) > 1 && got[1] != c.want[1]) {
				t.Errorf("calls %v, want %v", got, c.want)
			}
		})
	}
}
