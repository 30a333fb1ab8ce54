// Package retry is the daemon's one retry policy: exponential backoff with
// jitter, waits that honour a server's retry-after, and cancellation by
// context. Every loop that tries again (model calls, delivery, Telegram
// polling, Discord rate limits, storage writes, MCP restarts, the cluster's
// LISTEN connection) uses it.
//
// The delays come from github.com/cenkalti/backoff/v5's ExponentialBackOff
// (multiplier 2, RandomizationFactor = Policy.Jitter). Its Retry function is
// not used: its timer cannot be replaced (tests here inject the wait), its
// RetryAfter resets the backoff and drops the cause, and it gives up after
// 15 minutes unless told otherwise. Do is that loop with those three
// changed.
//
// The package is a leaf (the library and the standard library only), so
// adapters, delivery, the agent and the daemon can all import it.
package retry

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// DefaultJitter is the spread the reconnect and delivery loops use: each
// wait is drawn from ±20% of its step, so many clients that failed together
// do not retry together.
const DefaultJitter = 0.2

// Policy says how long to wait between attempts and when to stop. The zero
// Policy retries at once, forever, until the operation succeeds, returns a
// Permanent error or ctx ends.
type Policy struct {
	// Initial is the first wait; each next one doubles, up to Max.
	Initial time.Duration
	// Max caps the doubling (before jitter, as in the library: with
	// Jitter j a wait is at most Max·(1+j)). Less than Initial: every wait
	// is Initial.
	Max time.Duration
	// Jitter spreads each wait over [step·(1−Jitter), step·(1+Jitter)];
	// 0 waits the exact steps. Clamped to [0, 1].
	Jitter float64
	// MaxTries is the number of attempts in all; 0 = no limit.
	MaxTries int
	// MaxElapsed gives up when the next wait would end more than this
	// after the first attempt began; 0 = no limit.
	MaxElapsed time.Duration
	// MaxWait caps the wait an After error asks for; 0 = no cap.
	MaxWait time.Duration
	// Sleep waits d or until ctx ends (default Sleep). A loop whose tests
	// must not wait, or which also stops on a signal of its own, sets it;
	// an error from it ends Do.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry, if set, is called before each wait with the number of
	// attempts made so far, the wait and the attempt's error (log lines,
	// counters).
	OnRetry func(attempt int, wait time.Duration, err error)
}

// Do runs op until it returns nil, and returns nil; or until it returns a
// Permanent error, MaxTries attempts were made or MaxElapsed would pass, and
// returns op's last error (without the Permanent or After marker). A
// failed attempt that asked for a wait with After waits at least that long
// (capped by MaxWait), else the next backoff step.
//
// When ctx ends (after an attempt, or during a wait) or Policy.Sleep fails,
// Do stops and returns op's last error too; the caller checks ctx to tell a
// shutdown from a failure.
func Do(ctx context.Context, p Policy, op func(context.Context) error) error {
	sleep := p.Sleep
	if sleep == nil {
		sleep = Sleep
	}
	b := p.Backoff()
	start := time.Now()
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		if err == nil {
			return nil
		}
		var perm *permanentError
		if errors.As(err, &perm) {
			return strip(err)
		}
		var after time.Duration
		var ae *afterError
		if errors.As(err, &ae) {
			after = ae.wait
		}
		err = strip(err)
		if p.MaxTries > 0 && attempt >= p.MaxTries || ctx.Err() != nil {
			return err
		}
		wait := b.Next()
		if after > 0 {
			if p.MaxWait > 0 {
				after = min(after, p.MaxWait)
			}
			wait = max(wait, after)
		}
		if p.MaxElapsed > 0 && time.Since(start)+wait > p.MaxElapsed {
			return err
		}
		if p.OnRetry != nil {
			p.OnRetry(attempt, wait, err)
		}
		if sleep(ctx, wait) != nil {
			return err
		}
	}
}

// Backoff is the policy's sequence of waits, for loops that are not "try
// until it works" (a supervisor restarting a connection forever, resetting
// after each good run). It is not safe for concurrent use.
type Backoff struct {
	b backoff.ExponentialBackOff
}

// Backoff returns a fresh sequence of p's waits (Initial first).
func (p Policy) Backoff() *Backoff {
	b := &Backoff{b: backoff.ExponentialBackOff{
		InitialInterval:     max(p.Initial, 0),
		RandomizationFactor: min(max(p.Jitter, 0), 1),
		Multiplier:          2,
		MaxInterval:         max(p.Max, p.Initial, 0),
	}}
	b.b.Reset()
	return b
}

// Next returns the next wait and moves the sequence on.
func (b *Backoff) Next() time.Duration { return b.b.NextBackOff() }

// Reset starts the sequence again at Initial.
func (b *Backoff) Reset() { b.b.Reset() }

// Permanent marks err as not worth retrying: Do returns it at once.
// Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// After marks err as retryable no sooner than d from now (a rate limit's
// retry_after): Do waits the longer of d, capped by Policy.MaxWait, and its
// next backoff step. After(d, nil) is nil; d <= 0 is a plain err.
func After(d time.Duration, err error) error {
	if err == nil {
		return nil
	}
	return &afterError{wait: d, err: err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

type afterError struct {
	wait time.Duration
	err  error
}

func (e *afterError) Error() string { return e.err.Error() }
func (e *afterError) Unwrap() error { return e.err }

// strip removes the markers op put around its error (a marker wrapped
// further stays: its text is the cause's already).
func strip(err error) error {
	for {
		switch e := err.(type) {
		case *permanentError:
			err = e.err
		case *afterError:
			err = e.err
		default:
			return err
		}
	}
}

// Sleep waits d or until ctx ends, and then returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
