// Package bolt is the embedded implementation of memory.Store, the default
// storage backend (`storage.backend: bolt`): one BoltDB file,
// <data_dir>/switchboard.db, holding sessions (metadata, messages, turns and
// archives), notes, the dedup table, the inbound inbox, the outbound outbox,
// scheduled jobs and their runs, the audit log and a small key/value area.
// Open returns a *Store; callers hold it as memory.Store (or a smaller
// interface). memory/storetest runs its conformance suite against it; the
// tests here add what only a file can show (locks, corruption, group commit,
// a SIGKILLed writer).
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
//	usage/<day>\x00<chat>\x00<persona>\x00<job>\x00<model>
//	                          16 bytes: prompt and completion tokens (big-endian
//	                          uint64); plus the totals <day> and <day>\x00<chat>
//	                          (one Get each for the budget gate; usage.go)
//	tasks/<seq>               TaskRecord (JSON); the task's id is "t<seq>" (tasks.go)
//	workspace/<chat>/files/<path>
//	                          FileInfo of a workspace file (workspace.go)
//	workspace/<chat>/data/<path>\x00<n>
//	                          the file's content, chunk n (4-byte big-endian),
//	                          at most 256 KiB each
//
// # Design decisions
//
//   - Writes that happen per message (Accept, AppendTurn, Audit, outbox) go through
//     bolt's DB.Batch, so many concurrent sessions share one fsync; a Batch
//     function may run more than once, so every closure resets its outputs first
//     and only returns errors for real failures (validation happens before Batch).
//   - The records written or read on every message (inbox items, outbox and
//     audit records, session metadata, history messages, turn headers) are
//     encoded by hand into one buffer per transaction (codec.go, arena.go) and
//     decoded by fast paths that accept only that canonical shape
//     (codec_decode.go); the bytes are exactly encoding/json's, and anything
//     else is read with encoding/json. A pending inbox item or send intent is
//     completed by rewriting its known tail, not by decoding it.
//   - ReadTurn reads a turn's history, metadata and notes in one read
//     transaction (memory.TurnReader).
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
//   - ViewFile reads a file read-only, for `storage migrate`, after the same
//     check; a panic or memory fault while it reads is a *CorruptError too.
package bolt

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

	"github.com/switchboard-bot/switchboard/memory"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// FileName is the database file name inside the data directory.
const FileName = "switchboard.db"

// schemaVersion is the on-disk format this package writes and reads.
const schemaVersion = 1

// Store is the open database. It is safe for concurrent use.
// It implements memory.Store.
type Store struct {
	db   *bbolt.DB
	path string
	opts memory.Options
	log  *slog.Logger

	closeOnce sync.Once
	closeErr  error

	gc groupCommit // memory.Options.GroupCommit

	health memory.HealthState // availability (health.go)
	opened os.FileInfo        // the file at path when it was opened (health.go)
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
	bUsage      = []byte("usage")

	topBuckets = [][]byte{bMeta, bSessions, bArchives, bNotes, bDedup, bDedupExp,
		bInbox, bOutbox, bOutboxTurn, bJobs, bRuns, bAudit, bKV, bUsage}

	kSchema  = []byte("schema")
	kCreated = []byte("created")
)

// Compile-time check that *Store is a complete memory.Store.
var (
	_ memory.Store      = (*Store)(nil)
	_ memory.TurnReader = (*Store)(nil)
)

// Open opens (creating if needed) the database at path. The parent directory
// is created with mode 0700 and the file with 0600. If another process holds
// the file, Open fails after opts.Timeout with an error wrapping ErrInUse; a
// file that is not a switchboard database yields an error wrapping
// ErrInvalidDatabase.
func Open(path string, opts memory.Options) (*Store, error) {
	opts = opts.WithDefaults()
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
	db, err := openBolt(path, opts, false)
	if err != nil {
		return nil, openErr(path, opts, existed, err)
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
	s.opened, _ = os.Stat(path) // nil: Probe cannot tell a replaced file
	if err := s.initSchema(); err != nil {
		_ = db.Close()
		if errors.Is(err, memory.ErrInvalidDatabase) {
			return nil, invalidErr(path, opts.Now(), err)
		}
		return nil, fmt.Errorf("memory: open %s: %w", path, err)
	}
	s.log.Debug("memory store opened", "path", path)
	return s, nil
}

// openBolt opens the file with bolt, a panic or memory fault while bolt
// reads the header becoming an error.
func openBolt(path string, opts memory.Options, readOnly bool) (db *bbolt.DB, err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("bolt panicked while reading the file: %v", r)
		}
	}()
	return bbolt.Open(path, 0o600, &bbolt.Options{Timeout: opts.Timeout, NoSync: opts.NoSync, ReadOnly: readOnly})
}

// openErr maps openBolt's error: the lock held elsewhere wraps ErrInUse; a
// file bolt cannot read is a *CorruptError.
func openErr(path string, opts memory.Options, existed bool, err error) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("memory: open %s: %w (lock not acquired within %s)", path, memory.ErrInUse, opts.Timeout)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrInvalidMapping):
		return invalidErr(path, opts.Now(), err)
	case existed && !errors.Is(err, os.ErrPermission):
		// Anything else on a non-empty file (short read, mmap of a
		// truncated file, a panic inside bolt) means the content is bad.
		return invalidErr(path, opts.Now(), err)
	default:
		return fmt.Errorf("memory: open %s: %w", path, err)
	}
}

// initSchema creates the buckets of a fresh file, or verifies an existing
// one. A file that has its schema and every bucket is only read: a write
// transaction commits (two fsyncs) even when it changed nothing, and that
// held up every restart on a busy disk.
func (s *Store) initSchema() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("file is %w: bolt panicked reading it: %v", memory.ErrInvalidDatabase, r)
		}
	}()
	complete := false
	if err := s.db.View(func(tx *bbolt.Tx) error {
		complete = schemaComplete(tx)
		return nil
	}); err != nil {
		return err
	}
	if complete {
		return nil
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bMeta)
		if meta == nil || meta.Get(kSchema) == nil {
			var foreign []string
			_ = tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
				foreign = append(foreign, string(name))
				return nil
			})
			if len(foreign) > 0 {
				return fmt.Errorf("file is %w: it is a bolt database of another program (buckets %q)", memory.ErrInvalidDatabase, foreign)
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
				return fmt.Errorf("file is %w: schema marker %q", memory.ErrInvalidDatabase, meta.Get(kSchema))
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

// schemaComplete reports whether tx's file has a schema this version reads
// and every top-level bucket (initSchema then has nothing to write).
func schemaComplete(tx *bbolt.Tx) bool {
	meta := tx.Bucket(bMeta)
	if meta == nil {
		return false
	}
	v, err := strconv.Atoi(string(meta.Get(kSchema)))
	if err != nil || v > schemaVersion {
		return false // the write transaction reports it
	}
	for _, name := range topBuckets {
		if tx.Bucket(name) == nil {
			return false
		}
	}
	return true
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
func (s *Store) view(ctx context.Context, op string, fn func(tx *bbolt.Tx) error) error {
	return s.viewOp(ctx, func() string { return op }, fn)
}

// viewOp is view with the operation's name built only for an error (the hot
// paths' names hold a session key).
func (s *Store) viewOp(ctx context.Context, op func() string, fn func(tx *bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %s: %w", op(), err)
	}
	if err := guard(func() error { return s.db.View(fn) }); err != nil {
		return s.noteFailure(wrapOp(op(), err))
	}
	return nil
}

// update runs fn in its own write transaction (not batched).
func (s *Store) update(ctx context.Context, op string, fn func(tx *bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	if err := guard(func() error { return s.db.Update(fn) }); err != nil {
		return s.noteFailure(wrapOp(op, err))
	}
	return nil
}

// batch runs fn through DB.Batch: fn may run more than once and must reset any
// outputs it writes.
func (s *Store) batch(ctx context.Context, op string, fn func(tx *bbolt.Tx) error) error {
	return s.batchOp(ctx, func() string { return op }, fn)
}

// batchOp is batch with the operation's name built only for an error.
func (s *Store) batchOp(ctx context.Context, op func() string, fn func(tx *bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %s: %w", op(), err)
	}
	err := guard(func() error {
		if s.opts.GroupCommit {
			return s.commitGrouped(fn)
		}
		return s.db.Batch(fn)
	})
	if err != nil {
		return s.noteFailure(wrapOp(op(), err))
	}
	return nil
}

// guard runs a bolt transaction so that a panic inside bolt (a damaged page
// reached after Open's check, e.g. the file overwritten underneath) becomes an
// error wrapping ErrInvalidDatabase instead of crashing the daemon.
func guard(fn func() error) error {
	if err := faultSafe("in a transaction", fn); err != nil {
		return guardError(err)
	}
	return nil
}

func guardError(err error) error {
	var p *panicError
	if errors.As(err, &p) {
		return fmt.Errorf("%w: %w (stop switchboard and run `switchboard doctor`)", memory.ErrInvalidDatabase, err)
	}
	return err
}

func wrapOp(op string, err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("memory: %s: %w", op, memory.ErrClosed)
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

func putJSON(b *bbolt.Bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	return b.Put(key, data)
}

func getJSON(b *bbolt.Bucket, key []byte, v any) (bool, error) {
	data := b.Get(key)
	if data == nil {
		return false, nil
	}
	if err := decodeRecord(data, v); err != nil {
		return true, fmt.Errorf("decode %q: %w", key, err)
	}
	return true, nil
}

// decodeRecord decodes a stored record: the hot records through their fast
// paths (codec_decode.go), anything else, or any other shape, through
// encoding/json.
func decodeRecord(data []byte, v any) error {
	switch r := v.(type) {
	case *memory.SessionMeta:
		if decodeSessionMeta(data, r) {
			return nil
		}
	case *storedMessage:
		if decodeStoredMessage(data, r) {
			return nil
		}
	case *memory.InboxItem:
		if decodeInboxItem(data, r) {
			return nil
		}
	case *memory.OutboxRecord:
		if decodeOutboxRecord(data, r) {
			return nil
		}
	}
	return json.Unmarshal(data, v)
}

// Stats counts records. It reads every inbox and outbox record (both are
// small by construction) and the metadata of every session.
func (s *Store) Stats(ctx context.Context) (memory.Stats, error) {
	st := memory.Stats{Path: s.path}
	err := s.view(ctx, "stats", func(tx *bbolt.Tx) error {
		st.FileSize = tx.Size()
		err := tx.Bucket(bSessions).ForEachBucket(func(k []byte) error {
			st.Sessions++
			var m memory.SessionMeta
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
		if err := countQueues(tx, &st); err != nil {
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
		return memory.Stats{}, err
	}
	if fi, err := os.Stat(s.path); err == nil {
		st.FileSize = fi.Size()
	}
	return st, nil
}

// countQueues counts inbox items by state and outbox records (total, pending).
func countQueues(tx *bbolt.Tx, st *memory.Stats) error {
	err := tx.Bucket(bInbox).ForEach(func(_, v []byte) error {
		var it memory.InboxItem
		if err := json.Unmarshal(v, &it); err != nil {
			return fmt.Errorf("decode inbox item: %w", err)
		}
		if it.State == memory.InboxAnswered {
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
		var r memory.OutboxRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decode outbox record: %w", err)
		}
		st.OutboxTotal++
		if r.Status == memory.OutboxPending {
			st.OutboxPending++
		}
		return nil
	})
	return err
}

// countKeys counts plain keys (not nested buckets) of b.
func countKeys(b *bbolt.Bucket) int {
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
		return fmt.Errorf("memory: check %s: %w: %w", s.path, memory.ErrInvalidDatabase, err)
	}
	return nil
}
