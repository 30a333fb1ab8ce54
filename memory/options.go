package memory

import (
	"errors"
	"log/slog"
	"time"
)

// Defaults for Options.
const (
	DefaultTimeout         = time.Second
	DefaultDedupTTL        = 7 * 24 * time.Hour
	DefaultAuditMaxAge     = 90 * 24 * time.Hour
	DefaultAuditMaxRecords = 100000
	DefaultRunsPerJob      = 100
	DefaultOutboxMaxAge    = 7 * 24 * time.Hour
)

// Sentinel errors; every returned error wraps one of these where it applies.
var (
	// ErrInUse means another process (or another Store in this process) holds
	// the database lock.
	ErrInUse = errors.New("database is in use by another switchboard process")
	// ErrInvalidDatabase means the file is not a readable switchboard database.
	ErrInvalidDatabase = errors.New("not a valid switchboard database")
	// ErrNotFound means the addressed record does not exist.
	ErrNotFound = errors.New("not found")
	// ErrClosed means the store was closed.
	ErrClosed = errors.New("store is closed")
)

// Options configure an implementation's Open. The zero value is usable.
// Clock, logger and retention apply to every backend; Timeout, NoSync,
// BatchDelay and GroupCommit are commit/locking knobs a backend honours where
// it has such a thing (memory/bolt does).
type Options struct {
	// Timeout bounds the wait for the file lock (default 1s).
	Timeout time.Duration
	// Now is the clock (default time.Now); tests inject a fake one.
	Now func() time.Time
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
	// NoSync skips fsync after each commit. Tests only: a crash may lose data.
	NoSync bool
	// BatchDelay is how long DB.Batch waits to gather concurrent writes
	// (default: bolt's 10ms). Lower means lower latency for a lone message.
	BatchDelay time.Duration
	// GroupCommit replaces bolt's timed batches for per-message writes: a
	// lone write commits at once, writes arriving during a commit share the
	// next one (see groupcommit.go). BatchDelay is then unused.
	GroupCommit bool

	// DedupTTL is how long a (channel, message id) pair blocks redelivery (default 7 days).
	DedupTTL time.Duration
	// AuditMaxAge drops audit records older than this in Prune (default 90 days).
	AuditMaxAge time.Duration
	// AuditMaxRecords keeps at most this many audit records (default 100000).
	AuditMaxRecords int
	// RunsPerJob keeps this many runs per job (default 100).
	RunsPerJob int
	// OutboxMaxAge drops outbox records created longer ago than this (default 7 days).
	OutboxMaxAge time.Duration
}

// WithDefaults returns o with every zero field set to its default; an
// implementation calls it once when it opens.
func (o Options) WithDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.DedupTTL <= 0 {
		o.DedupTTL = DefaultDedupTTL
	}
	if o.AuditMaxAge <= 0 {
		o.AuditMaxAge = DefaultAuditMaxAge
	}
	if o.AuditMaxRecords <= 0 {
		o.AuditMaxRecords = DefaultAuditMaxRecords
	}
	if o.RunsPerJob <= 0 {
		o.RunsPerJob = DefaultRunsPerJob
	}
	if o.OutboxMaxAge <= 0 {
		o.OutboxMaxAge = DefaultOutboxMaxAge
	}
	return o
}
