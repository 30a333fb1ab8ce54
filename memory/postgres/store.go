// Package postgres is the PostgreSQL implementation of memory.Store, the
// storage backend for replicas (`storage.backend: postgres`,
// `storage.postgres.url`): N identical switchboard processes share one
// database. It keeps every contract of memory.Store that memory/bolt keeps
// (memory/storetest proves both), on github.com/jackc/pgx/v5 (pgxpool).
//
// # Schema
//
// The schema lives in migrations/ as numbered golang-migrate files, embedded
// in the binary and applied by Open under migrate's advisory lock, so
// replicas starting together migrate once; the version is recorded in
// schema_migrations, and Check verifies it. Tables:
//
//	sessions   one row per session key: SessionMeta's counters and persona
//	archives   one row per reset: name "0001-20250102T150405Z", meta at reset
//	turns      one row per turn: header columns, messages as one JSON array;
//	           archive_id NULL while the turn is live
//	dedup      (channel, message_id) primary key, expires
//	inbox      accepted items (pending / answered) with session_key
//	outbox     send intents and receipts
//	notes, jobs, runs, audit, kv
//
// # Design decisions
//
//   - Every write that the contract calls one transaction is one PostgreSQL
//     transaction: Accept (dedup + inbox), AppendTurn, CommitTurn and
//     RecordDelivery (memory.Lifecycle), ResetSession, MoveSession, Prune.
//     A transaction that fails with a serialization failure or a deadlock is
//     retried a few times.
//   - Accept inserts the dedup row with ON CONFLICT ... DO UPDATE only when
//     the existing row has expired: two replicas accepting the same message
//     at once serialize on the primary key, and exactly one gets a row back.
//   - AppendTurn upserts the session row first, which locks it: turns of one
//     session commit in the order of their ids.
//   - LoadHistory picks whole turns, newest first, while they fit the limit
//     (a window sum over the turns' message counts), so only those rows'
//     messages leave the server.
//   - Times are stored as timestamptz, i.e. to the microsecond; the store
//     truncates its clock to microseconds and returns times in UTC, so what a
//     write returns equals what a read returns. Dedup expiry compares in the
//     database on the same truncated clock.
//   - PostgreSQL text cannot hold NUL bytes or invalid UTF-8: free-text
//     columns (answers, outbox text, notes, audit detail) are stored with
//     invalid sequences and NUL replaced by U+FFFD. Messages are JSON, which
//     escapes both, and round-trip exactly.
//   - Path and every error name the database by its URL without the
//     password.
//   - Cluster coordination (leases, session claims) lives in internal/cluster
//     with its own tables; this store serves it InboxPendingSession (one
//     session's backlog, by the inbox_session index), which the hub's claims
//     mode reads when a replica claims a chat.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-bot/switchboard/internal/redact"
	"github.com/switchboard-bot/switchboard/memory"
)

// Store is an open database. It is safe for concurrent use and implements
// memory.Store.
type Store struct {
	pool    *pgxpool.Pool
	path    string   // the URL without secrets
	secrets []string // the password and its pieces (redact.Passwords), scrubbed from every error
	opts    memory.Options
	log     *slog.Logger

	closed    atomic.Bool
	closeOnce sync.Once

	health memory.HealthState // availability (health.go)
	// slowProbe is set while the last probe ran out of its deadline
	// (health.go: two in a row mark the store unavailable).
	slowProbe atomic.Bool
}

// Compile-time check that *Store is a complete memory.Store.
var (
	_ memory.Store      = (*Store)(nil)
	_ memory.TurnReader = (*Store)(nil)
)

// checkTimeout bounds Check, which has no context of its own.
const checkTimeout = 30 * time.Second

// Open connects to the database at url (a PostgreSQL URL or key=value DSN),
// applies the embedded migrations (under an advisory lock, so concurrent
// Opens migrate once) and returns the store. ctx bounds connecting and
// migrating. Errors never contain the password.
func Open(ctx context.Context, url string, opts memory.Options) (*Store, error) {
	opts = opts.WithDefaults()
	if url == "" {
		return nil, errors.New("memory: open postgres: empty URL")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx hides the password in parse errors; scrub anyway.
		return nil, fmt.Errorf("memory: open postgres: %w", redact.Error(err, append(redact.Passwords(url), passwordOf(url))...))
	}
	s := &Store{path: redact.URL(url), secrets: append(redact.Passwords(url), cfg.ConnConfig.Password), opts: opts, log: opts.Logger}
	if !strings.Contains(url, "://") {
		s.path = dsnWithoutPassword(url)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, s.openErr(err)
	}
	s.pool = pool
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, s.openErr(err)
	}
	if err := migrateUp(ctx, pool, s.log); err != nil {
		pool.Close()
		return nil, s.openErr(err)
	}
	s.log.Debug("memory store opened", "path", s.path)
	return s, nil
}

func (s *Store) openErr(err error) error {
	return fmt.Errorf("memory: open %s: %w", s.path, redact.Error(err, s.secrets...))
}

// passwordOf is the password in a URL or DSN ("" if none or unparsable).
func passwordOf(url string) string {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return ""
	}
	return cfg.Password
}

// dsnWithoutPassword drops password=... from a key=value DSN.
func dsnWithoutPassword(dsn string) string {
	fields := strings.Fields(dsn)
	out := fields[:0]
	for _, f := range fields {
		if strings.HasPrefix(strings.ToLower(f), "password=") {
			f = "password=[redacted]"
		}
		out = append(out, f)
	}
	return strings.Join(out, " ")
}

// Close closes the pool. It is idempotent; every call after it fails with
// an error wrapping memory.ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.pool.Close()
	})
	return nil
}

// Path is the database URL without its password.
func (s *Store) Path() string { return s.path }

// now is the store clock, in UTC and truncated to PostgreSQL's microsecond.
func (s *Store) now() time.Time { return s.opts.Now().UTC().Truncate(time.Microsecond) }

// begin checks the store and ctx before a statement.
func (s *Store) begin(ctx context.Context, op string) error {
	if s.closed.Load() {
		return fmt.Errorf("memory: %s: %w", op, memory.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	return nil
}

// maxTxAttempts bounds retries of a transaction that lost a serialization
// race or a deadlock.
const maxTxAttempts = 4

// tx runs fn in one transaction, retrying it on serialization failures and
// deadlocks; fn must reset any outputs it writes.
func (s *Store) tx(ctx context.Context, op string, fn func(pgx.Tx) error) error {
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	var err error
	for attempt := 1; attempt <= maxTxAttempts; attempt++ {
		err = pgx.BeginFunc(ctx, s.pool, fn)
		if !retryable(err) {
			break
		}
		s.log.Debug("memory transaction retried", "op", op, "attempt", attempt, "err", err)
	}
	return s.wrap(op, err)
}

func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// wrap prefixes err with the operation and hides the password.
func (s *Store) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if s.closed.Load() && !errors.Is(err, memory.ErrClosed) {
		return fmt.Errorf("memory: %s: %w: %w", op, memory.ErrClosed, redact.Error(err, s.secrets...))
	}
	werr := fmt.Errorf("memory: %s: %w", op, redact.Error(err, s.secrets...))
	if unreachable(err) {
		s.unavailable(werr) // at once, not at the next probe (health.go)
	}
	return werr
}

// clean makes s storable in a text column: invalid UTF-8 and NUL become
// U+FFFD.
func clean(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// nullTime is t, or NULL for the zero time.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// fromNull is *t in UTC, or the zero time for NULL.
func fromNull(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// ids converts memory ids to bigint parameters.
func ids(in []uint64) []int64 {
	out := make([]int64, len(in))
	for i, v := range in {
		out[i] = int64(v)
	}
	return out
}

// fromIDs converts a bigint[] back; empty is nil, as bolt's JSON has it.
func fromIDs(in []int64) []uint64 {
	if len(in) == 0 {
		return nil
	}
	out := make([]uint64, len(in))
	for i, v := range in {
		out[i] = uint64(v)
	}
	return out
}
