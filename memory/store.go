// Package memory owns Switchboard's durable state: one BoltDB file,
// <data_dir>/switchboard.db, holding sessions (metadata, messages, turns and
// archives), notes, the dedup table, the inbound inbox, the outbound outbox,
// scheduled jobs and their runs, the audit log and a small key/value area.
// It knows nothing about platforms, the agent or the scheduler: everything
// above it stores its own JSON or uses the types declared here.
//
// # Bucket layout
//
// All integers in keys are big-endian uint64 ("seq" below), so a cursor walks
// records in arrival order; sequences come from the enclosing bucket's
// NextSequence and are therefore assigned inside the writing transaction.
// Values are JSON unless noted.
//
//	meta                      "schema" → "1" (format version), "created" → RFC 3339
//	sessions/<key>/           one nested bucket per session key ("telegram:123:45")
//	    "meta"                SessionMeta
//	    msgs/<seq>            storedMessage{turn seq, Message}
//	    turns/<seq>           storedTurn{Turn header, first message seq, count}
//	archives/<key>/<id>/      one nested bucket per reset ("0001-20250102T150405Z"),
//	                          same shape as sessions/<key> plus "archived" → RFC 3339
//	notes/<scope>/<seq>       Note; a scope only ever reads its own bucket; seq comes
//	                          from notes' own sequence (ids unique across scopes)
//	dedup/<channel>\x00<message id>
//	                          8-byte big-endian expiry (Unix nanoseconds)
//	dedup_exp/<expiry><dedup key>
//	                          empty; expiry index so Prune reads only expired records
//	inbox/<seq>               InboxItem (seq is InboxItem.ID)
//	outbox/<seq>              OutboxRecord (seq is OutboxRecord.ID)
//	outbox_turn/<turn id>\x00<seq>
//	                          empty; index for OutboxForTurn
//	jobs/<name>               JobRecord
//	runs/<job>/<seq>          JobRun; IDs come from runs' own sequence (unique across jobs)
//	audit/<seq>               AuditRecord
//	kv/<key>                  raw bytes
//
// # Design decisions
//
//   - Writes that happen per message (Accept, AppendTurn, Audit, outbox) go through
//     bolt's DB.Batch, so many concurrent sessions share one fsync; a Batch
//     function may run more than once, so every closure resets its outputs first
//     and only returns errors for real failures (validation happens before Batch).
//   - Messages of a session live in their own nested bucket with sequence keys:
//     LoadHistory walks backwards from the last key and reads only what it returns
//     (plus one message to see the turn boundary).
//   - History is stored exactly as the turn produced it (a canceled turn may hold
//     a tool call without its result); LoadHistory sanitizes on the way out, so
//     the model never sees an orphan tool call or tool result.
//   - A message whose MessageID is empty is accepted without dedup (nothing to
//     compare against).
//   - InboxPending returns every item not yet marked done, answered or not: an
//     answered item means "deliver the stored answer", a pending one "run the turn".
//   - ResetSession keeps the persona binding of the session (a reset clears the
//     conversation, not the operator's or user's persona choice).
//   - When not even the newest turn fits LoadHistory's limit, that turn is
//     condensed to its user messages and plain assistant answers rather than
//     returning no context at all.
//   - Note ids are unique across scopes, so an id learned in one scope can never
//     address (or delete) a note of another.
//   - DeleteJob also deletes the job's run history.
//   - ListAudit and ListRuns return the newest records first.
//   - Open refuses a bolt file that holds buckets but no switchboard schema
//     marker, so pointing data_dir at another program's database fails loudly
//     instead of writing into it.
//   - Open verifies an existing file before returning (integrity.go): the
//     header against the file's length, a walk of every page, and bolt's
//     consistency check, the check `doctor` runs. A damaged file fails with a
//     *CorruptError (wrapping ErrInvalidDatabase) naming the fix, so `run`
//     refuses to start instead of crash-looping. A panic inside bolt in any
//     later transaction becomes an error wrapping ErrInvalidDatabase.
package memory

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// FileName is the database file name inside the data directory.
const FileName = "switchboard.db"

// schemaVersion is the on-disk format this package writes and reads.
const schemaVersion = 1

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

// Options configure Open. The zero value is usable.
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

func (o Options) withDefaults() Options {
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

// Store is the open database. It is safe for concurrent use.
type Store struct {
	db   *bolt.DB
	path string
	opts Options
	log  *slog.Logger

	closeOnce sync.Once
	closeErr  error

	gc groupCommit // Options.GroupCommit
}

// Bucket names.
var (
	bMeta       = []byte("meta")
	bSessions   = []byte("sessions")
	bArchives   = []byte("archives")
	bNotes      = []byte("notes")
	bDedup      = []byte("dedup")
	bDedupExp   = []byte("dedup_exp")
	bInbox      = []byte("inbox")
	bOutbox     = []byte("outbox")
	bOutboxTurn = []byte("outbox_turn")
	bJobs       = []byte("jobs")
	bRuns       = []byte("runs")
	bAudit      = []byte("audit")
	bKV         = []byte("kv")

	topBuckets = [][]byte{bMeta, bSessions, bArchives, bNotes, bDedup, bDedupExp,
		bInbox, bOutbox, bOutboxTurn, bJobs, bRuns, bAudit, bKV}

	kSchema  = []byte("schema")
	kCreated = []byte("created")
)

// Open opens (creating if needed) the database at path. The parent directory
// is created with mode 0700 and the file with 0600. If another process holds
// the file, Open fails after opts.Timeout with an error wrapping ErrInUse; a
// file that is not a switchboard database yields an error wrapping
// ErrInvalidDatabase.
func Open(path string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	if path == "" {
		return nil, errors.New("memory: open: empty path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("memory: open %s: create directory: %w", path, err)
	}
	existed := false
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		existed = true
		if err := preflight(path); err != nil {
			return nil, invalidErr(path, opts.Now(), err)
		}
	}
	db, err := openBolt(path, opts)
	if err != nil {
		switch {
		case errors.Is(err, berrors.ErrTimeout):
			return nil, fmt.Errorf("memory: open %s: %w (lock not acquired within %s)", path, ErrInUse, opts.Timeout)
		case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
			errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrInvalidMapping):
			return nil, invalidErr(path, opts.Now(), err)
		case existed && !errors.Is(err, os.ErrPermission):
			// Anything else on a non-empty file (short read, mmap of a
			// truncated file, a panic inside bolt) means the content is bad.
			return nil, invalidErr(path, opts.Now(), err)
		default:
			return nil, fmt.Errorf("memory: open %s: %w", path, err)
		}
	}
	if existed {
		// The check doctor runs: a damaged file must fail here, not with a
		// bolt panic on the first message (see integrity.go).
		if err := verify(db); err != nil {
			_ = db.Close()
			return nil, invalidErr(path, opts.Now(), err)
		}
	}
	if opts.BatchDelay > 0 {
		db.MaxBatchDelay = opts.BatchDelay
	}
	s := &Store{db: db, path: path, opts: opts, log: opts.Logger}
	if err := s.initSchema(); err != nil {
		_ = db.Close()
		if errors.Is(err, ErrInvalidDatabase) {
			return nil, invalidErr(path, opts.Now(), err)
		}
		return nil, fmt.Errorf("memory: open %s: %w", path, err)
	}
	s.log.Debug("memory store opened", "path", path)
	return s, nil
}

func openBolt(path string, opts Options) (db *bolt.DB, err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("bolt panicked while reading the file: %v", r)
		}
	}()
	return bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.Timeout, NoSync: opts.NoSync})
}

// initSchema creates the buckets of a fresh file, or verifies an existing one.
func (s *Store) initSchema() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("file is %w: bolt panicked reading it: %v", ErrInvalidDatabase, r)
		}
	}()
	return s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bMeta)
		if meta == nil || meta.Get(kSchema) == nil {
			var foreign []string
			_ = tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
				foreign = append(foreign, string(name))
				return nil
			})
			if len(foreign) > 0 {
				return fmt.Errorf("file is %w: it is a bolt database of another program (buckets %q)", ErrInvalidDatabase, foreign)
			}
			m, err := tx.CreateBucket(bMeta)
			if err != nil {
				return fmt.Errorf("create schema: %w", err)
			}
			if err := m.Put(kSchema, []byte(strconv.Itoa(schemaVersion))); err != nil {
				return fmt.Errorf("create schema: %w", err)
			}
			if err := m.Put(kCreated, []byte(s.now().Format(time.RFC3339Nano))); err != nil {
				return fmt.Errorf("create schema: %w", err)
			}
		} else {
			v, err := strconv.Atoi(string(meta.Get(kSchema)))
			if err != nil {
				return fmt.Errorf("file is %w: schema marker %q", ErrInvalidDatabase, meta.Get(kSchema))
			}
			if v > schemaVersion {
				return fmt.Errorf("database format %d was written by a newer switchboard (this one reads %d)", v, schemaVersion)
			}
		}
		for _, name := range topBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		return nil
	})
}

// Close closes the database. It is idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("memory: close: %w", err)
		}
	})
	return s.closeErr
}

// Path is the database file path.
func (s *Store) Path() string { return s.path }

func (s *Store) now() time.Time { return s.opts.Now() }

// view runs fn in a read transaction after checking ctx.
func (s *Store) view(ctx context.Context, op string, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	if err := guard(func() error { return s.db.View(fn) }); err != nil {
		return wrapOp(op, err)
	}
	return nil
}

// update runs fn in its own write transaction (not batched).
func (s *Store) update(ctx context.Context, op string, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	if err := guard(func() error { return s.db.Update(fn) }); err != nil {
		return wrapOp(op, err)
	}
	return nil
}

// batch runs fn through DB.Batch: fn may run more than once and must reset any
// outputs it writes.
func (s *Store) batch(ctx context.Context, op string, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	err := guard(func() error {
		if s.opts.GroupCommit {
			return s.commitGrouped(fn)
		}
		return s.db.Batch(fn)
	})
	if err != nil {
		return wrapOp(op, err)
	}
	return nil
}

// guard runs a bolt transaction so that a panic inside bolt (a damaged page
// reached after Open's check, e.g. the file overwritten underneath) becomes an
// error wrapping ErrInvalidDatabase instead of crashing the daemon.
func guard(fn func() error) error {
	err := faultSafe("in a transaction", fn)
	var p *panicError
	if errors.As(err, &p) {
		return fmt.Errorf("%w: %w (stop switchboard and run `switchboard doctor`)", ErrInvalidDatabase, err)
	}
	return err
}

func wrapOp(op string, err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("memory: %s: %w", op, ErrClosed)
	}
	return fmt.Errorf("memory: %s: %w", op, err)
}

// u64 encodes v as an 8-byte big-endian key.
func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func fromU64(b []byte) uint64 {
	if len(b) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	return b.Put(key, data)
}

func getJSON(b *bolt.Bucket, key []byte, v any) (bool, error) {
	data := b.Get(key)
	if data == nil {
		return false, nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return true, fmt.Errorf("decode %q: %w", key, err)
	}
	return true, nil
}

// Stats are counts for `switchboard doctor` and /status.
type Stats struct {
	Path          string `json:"path"`
	FileSize      int64  `json:"file_size"`
	Sessions      int    `json:"sessions"`
	Messages      int    `json:"messages"`
	Archives      int    `json:"archives"`
	Notes         int    `json:"notes"`
	DedupRecords  int    `json:"dedup_records"`
	InboxPending  int    `json:"inbox_pending"`
	InboxAnswered int    `json:"inbox_answered"`
	OutboxPending int    `json:"outbox_pending"`
	OutboxTotal   int    `json:"outbox_total"`
	Jobs          int    `json:"jobs"`
	Runs          int    `json:"runs"`
	Audit         int    `json:"audit"`
	KV            int    `json:"kv"`
}

// Stats counts records. It reads every inbox and outbox record (both are
// small by construction) and the metadata of every session.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	st := Stats{Path: s.path}
	err := s.view(ctx, "stats", func(tx *bolt.Tx) error {
		st.FileSize = tx.Size()
		err := tx.Bucket(bSessions).ForEachBucket(func(k []byte) error {
			st.Sessions++
			var m SessionMeta
			if _, err := getJSON(tx.Bucket(bSessions).Bucket(k), kSessMeta, &m); err != nil {
				return err
			}
			st.Messages += m.Messages
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.Bucket(bArchives).ForEachBucket(func(k []byte) error {
			return tx.Bucket(bArchives).Bucket(k).ForEachBucket(func([]byte) error {
				st.Archives++
				return nil
			})
		})
		if err != nil {
			return err
		}
		err = tx.Bucket(bNotes).ForEachBucket(func(k []byte) error {
			st.Notes += countKeys(tx.Bucket(bNotes).Bucket(k))
			return nil
		})
		if err != nil {
			return err
		}
		st.DedupRecords = countKeys(tx.Bucket(bDedup))
		err = tx.Bucket(bInbox).ForEach(func(_, v []byte) error {
			var it InboxItem
			if err := json.Unmarshal(v, &it); err != nil {
				return fmt.Errorf("decode inbox item: %w", err)
			}
			if it.State == InboxAnswered {
				st.InboxAnswered++
			} else {
				st.InboxPending++
			}
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.Bucket(bOutbox).ForEach(func(_, v []byte) error {
			var r OutboxRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode outbox record: %w", err)
			}
			st.OutboxTotal++
			if r.Status == OutboxPending {
				st.OutboxPending++
			}
			return nil
		})
		if err != nil {
			return err
		}
		st.Jobs = countKeys(tx.Bucket(bJobs))
		err = tx.Bucket(bRuns).ForEachBucket(func(k []byte) error {
			st.Runs += countKeys(tx.Bucket(bRuns).Bucket(k))
			return nil
		})
		if err != nil {
			return err
		}
		st.Audit = countKeys(tx.Bucket(bAudit))
		st.KV = countKeys(tx.Bucket(bKV))
		return nil
	})
	if err != nil {
		return Stats{}, err
	}
	if fi, err := os.Stat(s.path); err == nil {
		st.FileSize = fi.Size()
	}
	return st, nil
}

// countKeys counts plain keys (not nested buckets) of b.
func countKeys(b *bolt.Bucket) int {
	n := 0
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v != nil {
			n++
		}
	}
	return n
}

// Check runs the integrity check Open runs on an existing file (every page
// walked, then bolt's consistency check; see integrity.go), for `doctor`. It
// returns nil when the file is consistent, else an error wrapping
// ErrInvalidDatabase that lists the problems.
func (s *Store) Check() error {
	if err := verify(s.db); err != nil {
		if errors.Is(err, berrors.ErrDatabaseNotOpen) {
			return wrapOp("check", err)
		}
		return fmt.Errorf("memory: check %s: %w: %w", s.path, ErrInvalidDatabase, err)
	}
	return nil
}
