package channels

import (
	"context"
	"sync"
	"time"
)

// TypingLoop is the loop behind an adapter's StartTyping (Typer): the
// indicator is shown once Delay has passed, then every Interval, until stop.
type TypingLoop struct {
	Delay    time.Duration // before the first Show; <= 0: at once
	Interval time.Duration // between Shows
	// After is the clock of Delay and of the flush wait (tests fire it by
	// hand); nil: time.After.
	After func(time.Duration) <-chan time.Time
	// Show makes one call. Its context is not ended by stop: see Start.
	Show func(ctx context.Context)
	// Off, when set, takes the indicator down after the last Show (on a
	// context of its own); it is not called if Show never was.
	Off func(ctx context.Context)
}

// TypingFlush bounds how long stop waits for a call in flight, and Off.
const TypingFlush = 2 * time.Second

// Start runs the loop until ctx ends or stop is called. stop is idempotent
// and returns once the loop has ended: no call follows it. A call already
// sent when stop is called is let finish (at most TypingFlush) rather than
// cut off, so the platform has it before the answer that follows: cut off
// on our side, its request may still arrive after the answer and show
// "typing…" under it for seconds.
func (l TypingLoop) Start(ctx context.Context) (stop func()) {
	after := l.After
	if after == nil {
		after = time.After
	}
	ctx, cancel := context.WithCancel(ctx)
	callCtx, callCancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if l.Delay > 0 {
			select {
			case <-ctx.Done():
				return
			case <-after(l.Delay):
			}
		}
		ticker := time.NewTicker(l.Interval)
		defer ticker.Stop()
		for ctx.Err() == nil {
			l.Show(callCtx)
			select {
			case <-ctx.Done():
			case <-ticker.C:
			}
		}
		if l.Off != nil {
			off, c := context.WithTimeout(callCtx, TypingFlush)
			l.Off(off)
			c()
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			defer callCancel()
			cancel()
			select {
			case <-done:
				return
			default: // a call may be in flight
			}
			select {
			case <-done:
			case <-after(TypingFlush):
				callCancel()
				<-done
			}
		})
	}
}
