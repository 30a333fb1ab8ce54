package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboard-bot/switchboard/memory"
)

// Compile-time check that *Store reports its availability (memory.Prober).
var _ memory.Prober = (*Store)(nil)

// Probe asks the server for SELECT 1 (over a pooled connection, or a new
// one when the pool's were lost) and records the outcome: a failure marks
// the store unavailable, a success available again. A probe that runs out
// of its own deadline marks it only when the probe before it ran out of
// time too: one slow answer on a busy machine is not an outage (a probe
// every lease_ttl/3 still shows a hung server within lease_ttl). A canceled
// ctx (shutdown) records nothing.
func (s *Store) Probe(ctx context.Context) error {
	const op = "probe"
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	var one int
	err := s.pool.QueryRow(ctx, "SELECT 1").Scan(&one)
	switch {
	case err == nil:
		s.slowProbe.Store(false)
		if outage, ended := s.health.Recover(s.now()); ended {
			s.log.Info("data store available again", "store", s.path, "unavailable_for", outage)
		}
		return nil
	case s.closed.Load() || errors.Is(ctx.Err(), context.Canceled):
		return s.wrap(op, err)
	case errors.Is(err, context.DeadlineExceeded) && !s.slowProbe.Swap(true):
		return s.wrap(op, err) // the first probe out of time in a row
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		s.slowProbe.Store(false)
	}
	err = s.wrap(op, err)
	s.unavailable(err)
	return err
}

// Health reports whether the database answered the last probe and no
// operation since failed for want of it.
func (s *Store) Health() memory.Health { return s.health.Health() }

// unavailable marks the store unavailable because of err (a wrapped,
// password-free error), logging the start of an outage once.
func (s *Store) unavailable(err error) {
	if s.health.Fail(s.now(), "PostgreSQL unreachable: "+err.Error()) {
		s.log.Error("data store unavailable: the database does not answer; /readyz answers 503 until a probe succeeds",
			"store", s.path, "err", err)
	}
}

// unreachable reports whether err means the server cannot serve at all (the
// connection refused, lost or cut by a shutdown, the server out of
// resources or failing I/O) rather than a problem of the statement. A
// statement that ran into its caller's deadline is not counted: a slow
// query is not an outage, and the probe's own deadline catches a hung
// server.
func unreachable(err error) bool {
	if err == nil || errors.Is(err, memory.ErrClosed) || errors.Is(err, context.Canceled) {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code[:min(2, len(pe.Code))] {
		case "08", // connection exception
			"53", // insufficient resources: disk full, out of memory, too many connections
			"58": // system error: I/O
			return true
		}
		// admin_shutdown, crash_shutdown, cannot_connect_now
		return pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ne net.Error
	if pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED)
}
