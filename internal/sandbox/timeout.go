package sandbox

import (
	"context"
	"time"
)

type timeoutKey struct{}

// WithTimeout returns ctx asking Run for a wall-clock timeout shorter than
// the Runner's (a tool call's own timeout); it never lengthens it. A run
// that reaches it is a Result with TimedOut set, like exec.timeout.
func WithTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, timeoutKey{}, d)
}

// Timeout is the Runner's wall-clock timeout per command (exec.timeout).
func (r *Runner) Timeout() time.Duration { return r.o.Timeout }

// timeoutFor is the wall-clock timeout of a run under ctx.
func (r *Runner) timeoutFor(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(timeoutKey{}).(time.Duration); ok && d > 0 && d < r.o.Timeout {
		return d
	}
	return r.o.Timeout
}
