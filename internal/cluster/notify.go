package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-bot/switchboard/internal/retry"
)

// Notify sends payload on channel to every replica's Listen (PostgreSQL
// NOTIFY: delivered after the sending transaction commits, to listeners
// connected at that moment; a listener that is reconnecting misses it, so
// receivers keep a poll as fallback).
func (c *Cluster) Notify(ctx context.Context, channel, payload string) error {
	if _, err := c.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, payload); err != nil {
		return fmt.Errorf("cluster: notify %s: %w", channel, c.wrap(err))
	}
	return nil
}

// listenRetry is the wait before Listen reconnects: 100ms doubling to 5s,
// jittered so the replicas a database restart cut off do not all reconnect
// at once; it starts over after a connection that got as far as LISTEN.
func listenRetry() retry.Policy {
	return retry.Policy{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Jitter: retry.DefaultJitter}
}

// Listen calls fn with each payload notified on channel until ctx is done.
// It holds one dedicated connection (outside the pool), reconnecting with
// backoff (listenRetry) when it breaks; fn runs on Listen's goroutine and
// should be quick (signal a channel, don't work).
func (c *Cluster) Listen(ctx context.Context, channel string, fn func(payload string)) {
	backoff := listenRetry().Backoff()
	for ctx.Err() == nil {
		connected, err := c.listenOnce(ctx, channel, fn)
		if ctx.Err() != nil {
			return
		}
		if connected {
			backoff.Reset()
		}
		wait := backoff.Next()
		c.log.Warn("cluster: listen connection lost; reconnecting", "channel", channel, "retry_in", wait, "err", err)
		if retry.Sleep(ctx, wait) != nil {
			return
		}
	}
}

// listenOnce connects, listens and delivers until the connection fails or
// ctx ends; connected reports that LISTEN succeeded.
func (c *Cluster) listenOnce(ctx context.Context, channel string, fn func(string)) (connected bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, c.pool.Config().ConnConfig.Copy())
	if err != nil {
		return false, c.wrap(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return false, c.wrap(err)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, c.wrap(err)
		}
		fn(n.Payload)
	}
}

// wakeHub fans lease-release notifications out to the Holds waiting for
// that lease. Its listener starts with the first subscription and runs
// until Close.
type wakeHub struct {
	mu    sync.Mutex
	subs  map[string]map[chan struct{}]struct{}
	start sync.Once
}

func (w *wakeHub) init() { w.subs = map[string]map[chan struct{}]struct{}{} }

// subscribe returns a channel signaled (without blocking) when another
// replica releases lease name.
func (c *Cluster) subscribe(name string) chan struct{} {
	c.wake.start.Do(func() {
		c.bg.Add(1)
		go func() {
			defer c.bg.Done()
			ctx, cancel := c.stopCtx()
			defer cancel()
			c.Listen(ctx, leaseChannel, c.wakeUp)
		}()
	})
	ch := make(chan struct{}, 1)
	c.wake.mu.Lock()
	defer c.wake.mu.Unlock()
	if c.wake.subs[name] == nil {
		c.wake.subs[name] = map[chan struct{}]struct{}{}
	}
	c.wake.subs[name][ch] = struct{}{}
	return ch
}

func (c *Cluster) unsubscribe(name string, ch chan struct{}) {
	c.wake.mu.Lock()
	defer c.wake.mu.Unlock()
	delete(c.wake.subs[name], ch)
	if len(c.wake.subs[name]) == 0 {
		delete(c.wake.subs, name)
	}
}

// wakeUp handles one release notification; releases by this replica wake
// nobody here (its own Hold pauses before trying again on purpose).
func (c *Cluster) wakeUp(payload string) {
	var n struct {
		Lease string `json:"lease"`
		By    string `json:"by"`
	}
	if json.Unmarshal([]byte(payload), &n) != nil || n.By == c.id {
		return
	}
	c.wake.mu.Lock()
	defer c.wake.mu.Unlock()
	for ch := range c.wake.subs[n.Lease] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
