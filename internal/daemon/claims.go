package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/internal/cluster"
	"github.com/switchboard-bot/switchboard/memory/postgres"
)

// The hub's per-session claims on the cluster's leases (issue 18): a claim
// is the lease "session:<key>"; new inbox items are announced on the
// NOTIFY channel inboxChannel, and every replica sweeps the inbox every
// lease_ttl/3 so a dead replica's sessions are taken over once its claims
// expire (at most lease_ttl + lease_ttl/3 after it died).

// inboxChannel is the NOTIFY channel new inbox items are announced on.
const inboxChannel = "switchboard_inbox"

var (
	_ hub.Claims       = (*sessionClaims)(nil)
	_ hub.SessionInbox = (*postgres.Store)(nil)
)

// sessionClaims implements hub.Claims on a *cluster.Cluster.
type sessionClaims struct {
	c   *cluster.Cluster
	log *slog.Logger
}

// sessionClaims returns the hub's Claims with replicas; nil with bolt (a
// nil hub.Claims, not a typed nil).
func (d *Daemon) sessionClaims() hub.Claims {
	if d.cluster.c == nil {
		return nil
	}
	d.claims = &sessionClaims{c: d.cluster.c, log: d.log}
	return d.claims
}

// TryClaim takes the session's lease once; while held it is renewed every
// TTL/3, and held is canceled at the local deadline (the start of the last
// successful renewal + TTL - TTL/5), before another replica can take it.
func (s *sessionClaims) TryClaim(ctx context.Context, session string) (context.Context, func(), bool, error) {
	name := "session:" + session
	start := time.Now()
	token, ok, err := s.c.TryAcquire(ctx, name)
	if err != nil || !ok {
		return nil, nil, false, err
	}
	held, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.renew(held, cancel, name, token, start)
	}()
	release := func() {
		cancel()
		<-done
		rctx, rcancel := context.WithTimeout(context.Background(), s.c.TTL())
		defer rcancel()
		if err := s.c.Release(rctx, name, token); err != nil {
			s.log.Warn("release a session claim; it expires by itself", "session", session, "err", err)
		}
	}
	return held, release, true, nil
}

// renew keeps the lease until held ends; it cancels held when the lease is
// lost or could not be renewed before the local deadline.
func (s *sessionClaims) renew(held context.Context, cancel context.CancelFunc, name string, token int64, start time.Time) {
	ttl := s.c.TTL()
	deadline := start.Add(ttl - ttl/5)
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	for {
		timer := time.NewTimer(time.Until(deadline))
		select {
		case <-held.Done():
			timer.Stop()
			return
		case <-timer.C:
			s.log.Warn("a session claim could not be renewed in time; its turn stops and another replica takes over", "lease", name)
			cancel()
			return
		case <-tick.C:
			timer.Stop()
			at := time.Now()
			rctx, rcancel := context.WithDeadline(held, deadline)
			ok, err := s.c.Renew(rctx, name, token)
			rcancel()
			switch {
			case err == nil && ok:
				deadline = at.Add(ttl - ttl/5)
			case err == nil && !ok:
				s.log.Warn("a session claim was lost; its turn stops", "lease", name)
				cancel()
				return
			}
		}
	}
}

// Announce tells the other replicas that session has new inbox items.
func (s *sessionClaims) Announce(ctx context.Context, session string) {
	if err := s.c.Notify(ctx, inboxChannel, session); err != nil {
		s.log.Debug("announce inbox item; the sweep finds it", "session", session, "err", err)
	}
}

// run wakes h for announced sessions and sweeps the inbox every TTL/3 until
// ctx is done.
func (s *sessionClaims) run(ctx context.Context, h *hub.Handler) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.c.Listen(ctx, inboxChannel, h.Wake)
	}()
	defer func() { <-done }()
	tick := time.NewTicker(s.c.TTL() / 3)
	defer tick.Stop()
	for {
		if err := h.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("sweep the inbox for sessions to take over", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
