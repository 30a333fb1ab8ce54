package cluster

import (
	"context"
	"time"
)

// Hold runs work while this replica holds lease name, until ctx is done.
//
// It tries to acquire the lease every TTL/5, or at once when another
// replica releases it (NOTIFY). Holding, it renews every TTL/3 and cancels
// work's context at the local deadline (start of the last successful
// renew or acquire request + TTL - TTL/5, on the monotonic clock), which
// falls before the lease can expire in the database; it also cancels when
// a renew finds the lease lost, or when ctx ends. Once work has returned,
// Hold releases the lease, pauses TTL/5 (so a work that fails at once does
// not spin, and other replicas get their turn) and tries again. work must
// return soon after its context is canceled: the lease may pass to another
// replica TTL/5 after the cancellation.
func (c *Cluster) Hold(ctx context.Context, name string, work func(ctx context.Context, token int64)) {
	wake := c.subscribe(name)
	defer c.unsubscribe(name, wake)
	for ctx.Err() == nil {
		start := time.Now()
		token, ok, err := c.TryAcquire(ctx, name)
		switch {
		case err != nil && ctx.Err() == nil:
			c.log.Warn("cluster: acquiring lease failed", "lease", name, "err", err)
		case ok:
			c.log.Info("lease acquired", "lease", name, "token", token, "replica", c.id)
			c.run(ctx, name, token, start, work)
		}
		select {
		case <-ctx.Done():
		case <-wake:
		case <-time.After(c.ttl / 5):
		}
	}
}

// renewal is the outcome of one renew request and when it started.
type renewal struct {
	start time.Time
	ok    bool
	err   error
}

// run runs work under the acquired lease (token) until work returns, the
// lease is lost or cannot be renewed in time, or ctx ends; then it
// releases the lease.
func (c *Cluster) run(ctx context.Context, name string, token int64, start time.Time, work func(context.Context, int64)) {
	margin := c.ttl / 5
	deadline := start.Add(c.ttl - margin)
	// Not context.WithDeadline: the deadline moves with each renewal, so
	// a timer tracks it and cancel stops the work.
	workCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		work(workCtx, token)
	}()
	expiry := time.NewTimer(time.Until(deadline))
	defer expiry.Stop()
	tick := time.NewTicker(c.ttl / 3)
	defer tick.Stop()
	results := make(chan renewal, 1)
	renewing := false
	why := "work returned"
loop:
	for {
		select {
		case <-done:
			break loop
		case <-ctx.Done():
			why = "shutting down"
			break loop
		case <-expiry.C:
			why = "lease not renewed in time"
			break loop
		case <-tick.C:
			if !renewing {
				renewing = true
				go c.renewOnce(ctx, name, token, deadline, results)
			}
		case r := <-results:
			renewing = false
			switch {
			case r.err != nil:
				c.log.Warn("cluster: renewing lease failed", "lease", name, "err", r.err)
			case !r.ok:
				why = "lease lost"
				break loop
			default:
				deadline = r.start.Add(c.ttl - margin)
				expiry.Reset(time.Until(deadline))
			}
		}
	}
	cancel()
	<-done
	if renewing {
		<-results
	}
	level := c.log.Info
	if why == "lease not renewed in time" || why == "lease lost" {
		level = c.log.Warn
	}
	level("lease given up", "lease", name, "token", token, "reason", why)
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), margin)
	defer rcancel()
	if err := c.Release(rctx, name, token); err != nil {
		c.log.Debug("cluster: release after hold", "lease", name, "err", err)
	}
}

// renewOnce renews the lease, giving up at the current deadline, and
// reports the result with the request's start time.
func (c *Cluster) renewOnce(ctx context.Context, name string, token int64, deadline time.Time, out chan<- renewal) {
	start := time.Now()
	rctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	ok, err := c.Renew(rctx, name, token)
	out <- renewal{start: start, ok: ok, err: err}
}
