package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboard-bot/switchboard/internal/testkit/pgtest"
	"github.com/switchboard-bot/switchboard/memory"
)

// Issue 27: the store tells when the database cannot serve. A real
// operation that fails because the server is gone marks it unavailable at
// once; only a successful Probe marks it available again (a query that
// happens to work does not); a hung server fails the probe by its
// deadline. The reason never holds the password.
func TestHealthFollowsTheServer(t *testing.T) {
	bins, err := pgtest.FindBinaries()
	if err != nil {
		t.Skipf("PostgreSQL binaries not found (apt-get install postgresql): %v", err)
	}
	c, err := pgtest.NewCluster(bins, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	ctx := context.Background()
	url, err := c.CreateDatabase(ctx, "health")
	if err != nil {
		t.Fatal(err)
	}
	const pw = "health-pw-5c1d-do-not-show"
	s := openURL(t, strings.Replace(url, "postgres://postgres@", "postgres://postgres:"+pw+"@", 1), memory.Options{})
	if err := s.Probe(ctx); err != nil {
		t.Fatalf("Probe on a running server: %v", err)
	}
	if h := s.Health(); !h.OK {
		t.Fatalf("Health on a running server = %+v", h)
	}

	if err := c.Halt(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.KVGet(ctx, "k"); err == nil {
		t.Fatal("KVGet succeeded with the server stopped")
	}
	h := s.Health()
	if h.OK || !strings.Contains(h.Reason, "PostgreSQL unreachable") || h.Since.IsZero() {
		t.Fatalf("Health right after a failed operation = %+v, want unavailable naming PostgreSQL", h)
	}
	if strings.Contains(h.Reason, pw) {
		t.Fatalf("Health's reason shows the password: %q", h.Reason)
	}
	if err := s.Probe(ctx); err == nil {
		t.Fatal("Probe succeeded with the server stopped")
	}

	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.KVGet(ctx, "k"); err != nil {
		t.Fatalf("KVGet after the restart: %v", err)
	}
	if h := s.Health(); h.OK {
		t.Fatal("a plain query ended the outage; only a probe may")
	}
	if err := s.Probe(ctx); err != nil {
		t.Fatalf("Probe after the restart: %v", err)
	}
	if h := s.Health(); !h.OK || h.Reason != "" {
		t.Fatalf("Health after a good probe = %+v, want available", h)
	}

	// A hung server: the probe fails by its deadline; one slow probe is not
	// an outage (a busy machine), two in a row are.
	if err := c.Pause(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err = s.Probe(pctx)
		cancel()
		if err == nil {
			t.Fatal("Probe succeeded against a hung server")
		}
		if h := s.Health(); i == 0 && !h.OK {
			t.Fatalf("Health after one probe ran out of time = %+v, want still available", h)
		}
	}
	if rerr := c.Resume(); rerr != nil {
		t.Fatal(rerr)
	}
	if h := s.Health(); h.OK {
		t.Fatalf("Health after two probes ran out of time = %+v, want unavailable", h)
	}
	if err := s.Probe(ctx); err != nil {
		t.Fatalf("Probe after the server resumed: %v", err)
	}
	if h := s.Health(); !h.OK {
		t.Fatalf("Health after the server resumed = %+v", h)
	}

	// A probe canceled by its caller (shutdown) records nothing.
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	_ = s.Probe(cctx)
	if h := s.Health(); !h.OK {
		t.Fatalf("a canceled probe marked the store unavailable: %+v", h)
	}
}

// Which errors mean the server cannot serve, as opposed to a problem of the
// statement or its caller.
func TestUnreachableErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"connect refused", &pgconn.ConnectError{}, true},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"cannot connect now", &pgconn.PgError{Code: "57P03"}, true},
		{"connection exception", &pgconn.PgError{Code: "08006"}, true},
		{"disk full", &pgconn.PgError{Code: "53100"}, true},
		{"io error", &pgconn.PgError{Code: "58030"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, false},
		{"query canceled", &pgconn.PgError{Code: "57014"}, false},
		{"connection lost", fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF), true},
		{"caller canceled", fmt.Errorf("query: %w", context.Canceled), false},
		{"caller's deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), false},
		{"store closed", memory.ErrClosed, false},
		{"plain", errors.New("encode: bad value"), false},
	} {
		if got := unreachable(tc.err); got != tc.want {
			t.Errorf("%s: unreachable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
