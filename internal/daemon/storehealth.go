package daemon

// Store availability (issue 27). /readyz must not say "ready" while the
// data store cannot serve: PostgreSQL stopped or unreachable, the bolt file
// moved away, replaced or on a failing disk. Two signals feed it:
//
//   - the store's own Health (memory.Prober): a real operation that failed
//     because the store cannot serve marks it unavailable at once, and only
//     a successful probe marks it available again;
//   - probeStore, which runs the store's Probe every cluster.lease_ttl/3
//     (default 5 s), traffic or not, each bounded by the same interval, so
//     an outage shows within lease_ttl. A probe that has not returned by
//     the next tick (a hung disk under bolt, whose writes cannot be
//     interrupted) counts as a failure until a probe returns; one that is
//     merely late (a busy machine) does not.
//
// The outcome is /readyz's "store: unavailable since …" line, the storage
// line of /status and the switchboard_storage_up gauge. Failing writes on a
// store that is up (a full disk) stay the handler's signal
// (switchboard_storage_healthy, "store: writes failing"): see
// channels/hub/storage.go, whose recovery probe runs on the same tick.

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/switchboard-bot/switchboard/internal/cluster"
	"github.com/switchboard-bot/switchboard/memory"
)

// stuckProbe is a store probe that did not return within its interval.
type stuckProbe struct {
	since  time.Time
	reason string
}

// storeProbe is the daemon's state of the periodic store probe.
type storeProbe struct {
	stuck   atomic.Pointer[stuckProbe] // set while a probe overran its interval
	running atomic.Bool                // a probe has not returned yet
}

// storeProbeEvery is the probe interval and timeout: cluster.lease_ttl/3.
func (d *Daemon) storeProbeEvery() time.Duration {
	ttl := d.config().Cluster.LeaseTTL
	if ttl <= 0 {
		ttl = cluster.DefaultLeaseTTL
	}
	return ttl / 3
}

// probeStorage probes the store every storeProbeEvery until ctx ends, and
// lets the handler's write health recover while writes were failing even
// when no message is waiting to be retried.
func (d *Daemon) probeStorage(ctx context.Context) {
	t := time.NewTimer(d.storeProbeEvery())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		every := d.storeProbeEvery() // a reload may change lease_ttl
		d.probeStore(ctx, every)
		hctx, cancel := context.WithTimeout(ctx, every)
		d.handler.ProbeStorage(hctx)
		cancel()
		t.Reset(every)
	}
}

// probeStore runs one store probe bounded by timeout. It waits for the
// probe at most timeout; one that has not returned by then is left to
// finish on its own (no second probe starts meanwhile), and is marked stuck
// if it is still running at the next tick.
func (d *Daemon) probeStore(ctx context.Context, timeout time.Duration) {
	p, ok := d.store.(memory.Prober)
	if !ok {
		return
	}
	if !d.probe.running.CompareAndSwap(false, true) {
		// The last probe has not returned for a whole interval: stuck.
		s := &stuckProbe{since: d.opts.Now(), reason: fmt.Sprintf("the store has not answered its probe for more than %s", timeout)}
		if d.probe.stuck.CompareAndSwap(nil, s) {
			d.log.Error("data store unavailable; /readyz answers 503 until a probe succeeds", "store", d.store.Path(), "err", s.reason)
		}
		return
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer d.probe.running.Store(false)
		defer cancel()
		err := p.Probe(pctx)
		// It returned: the store's Health has the outcome now.
		if d.probe.stuck.Swap(nil) != nil && err == nil {
			d.log.Info("data store available again: it answers its probe", "store", d.store.Path())
		}
	}()
	select {
	case <-done:
	case <-pctx.Done():
	}
}

// storeHealth is the store's availability as /readyz, /status and
// switchboard_storage_up show it.
func (d *Daemon) storeHealth() memory.Health {
	h := memory.Health{OK: true}
	if p, ok := d.store.(memory.Prober); ok {
		h = p.Health()
	}
	if s := d.probe.stuck.Load(); s != nil && h.OK {
		h = memory.Health{Reason: s.reason, Since: s.since}
	}
	return h
}

// storageFact is the storage line of /status: the backend, where its data
// lives (a database URL without its password) and whether it serves.
func (d *Daemon) storageFact() string {
	backend := d.config().Storage.Backend
	if backend == "" {
		backend = "bolt"
	}
	state := "ok"
	if h := d.storeHealth(); !h.OK {
		state = "unavailable since " + h.Since.UTC().Format(time.RFC3339) + ": " + h.Reason
	}
	if w := d.handler.StorageHealth(); !w.OK {
		state += "; writes failing since " + w.Since.UTC().Format(time.RFC3339) + ": " + w.Reason
	}
	return fmt.Sprintf("storage: %s at %s: %s\n", backend, d.store.Path(), state)
}

// registerStoreGauge adds switchboard_storage_up to the metrics.
func (d *Daemon) registerStoreGauge() {
	d.metrics.Gauge("switchboard_storage_up",
		"1 while the data store serves (PostgreSQL answers; the bolt file is in place and takes writes), 0 while it does not; probed every cluster.lease_ttl/3.",
		func() float64 {
			if d.storeHealth().OK {
				return 1
			}
			return 0
		})
}
