package memory

import (
	"context"
	"sync"
	"time"
)

// Availability (issue 27). A store can stop serving while the process runs:
// the PostgreSQL server goes away, the bolt file is moved or deleted, its
// disk fails. Readiness (the daemon's /readyz) must say so even when no
// message arrives, so a store that can tell implements Prober:
//
//   - Probe is a cheap check the daemon runs every cluster.lease_ttl/3,
//     bounded by a timeout of its own: PostgreSQL answers a query; the bolt
//     file is still the one at its path and takes a small write.
//   - A real operation that fails because the store itself cannot serve
//     (the connection refused or lost, an I/O error, a damaged file) marks
//     it unavailable at once, without waiting for the next probe.
//   - Only a successful Probe marks it available again: one query that
//     happened to succeed does not end an outage.

// Health is a store's own view of whether it can serve.
type Health struct {
	OK     bool
	Reason string    // why not, while !OK; never holds a secret
	Since  time.Time // when the current state began (zero: available since open)
}

// Prober is implemented by stores that watch their own availability
// (memory/bolt, memory/postgres).
type Prober interface {
	// Probe checks cheaply that the store can serve now and records the
	// outcome in Health; ctx bounds it. The error is the reason.
	Probe(ctx context.Context) error
	// Health is the state the last probe, or a later failure of a real
	// operation, left.
	Health() Health
}

// HealthState keeps a Prober's Health; implementations embed one. Its zero
// value is available. It is safe for concurrent use.
type HealthState struct {
	mu     sync.Mutex
	down   bool
	reason string
	since  time.Time
}

// Fail marks the store unavailable for reason at now. It reports whether the
// store was available until then (the start of an outage: log it once).
// During an outage the reason is updated and the start kept.
func (h *HealthState) Fail(now time.Time, reason string) (started bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	started = !h.down
	if started {
		h.down, h.since = true, now
	}
	h.reason = reason
	return started
}

// Recover marks the store available at now (a probe succeeded). It reports
// how long the outage that ended lasted, and false when there was none.
func (h *HealthState) Recover(now time.Time) (outage time.Duration, ended bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down {
		return 0, false
	}
	outage = now.Sub(h.since)
	h.down, h.reason, h.since = false, "", now
	return outage, true
}

// Health reports the current state.
func (h *HealthState) Health() Health {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Health{OK: !h.down, Reason: h.reason, Since: h.since}
}
