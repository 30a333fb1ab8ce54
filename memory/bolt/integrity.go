package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/memory"

	bbolt "go.etcd.io/bbolt"
)

// Integrity checking. bolt trusts its file: a page id read from a damaged
// page is turned into a pointer into the memory map, so a half-truncated or
// garbage-written file makes bolt panic (or fault) on the first read that
// reaches the damage, long after Open returned. Open therefore verifies an
// existing file before handing out the store, with the same check `doctor`
// runs (Store.Check):
//
//  1. preflight reads the two meta pages with plain file I/O and refuses a
//     file shorter than the pages its header claims (a truncated file) or
//     whose root or freelist page lies beyond the end;
//  2. walk visits every bucket, key and value through bolt's public API on
//     this goroutine, with debug.SetPanicOnFault, so a wild page id becomes
//     a recovered error instead of a crash;
//  3. bolt's own consistency check (tx.Check) then runs over pages known to
//     be addressable.
//
// Every failure wraps ErrInvalidDatabase and carries the fix (FixCorrupt).

// FixCorrupt is what to do about a damaged database file: the text `doctor`
// prints and `run` exits with. now dates the suggested backup name.
func FixCorrupt(path string, now time.Time) string {
	return fmt.Sprintf("stop switchboard, then move the file aside to start fresh (mv %s %s.corrupt-%s) or restore it from a backup",
		path, path, now.Format("20060102"))
}

// CorruptError is the error Open returns for a damaged file. It wraps
// ErrInvalidDatabase and Detail. Its text names the file, the first problem
// (and how many more there are) and the fix, on two lines.
type CorruptError struct {
	Path   string
	Detail error  // what is wrong; a consistency check joins one error per problem
	Fix    string // FixCorrupt
}

func (e *CorruptError) Error() string {
	lines := strings.Split(strings.TrimSpace(e.Detail.Error()), "\n")
	msg := fmt.Sprintf("memory: open %s: file is %s: %s", e.Path, memory.ErrInvalidDatabase, lines[0])
	if len(lines) > 1 {
		msg += fmt.Sprintf(" (and %d more line(s); `switchboard doctor` lists them)", len(lines)-1)
	}
	return msg + "\nfix: " + e.Fix
}

func (e *CorruptError) Unwrap() []error { return []error{memory.ErrInvalidDatabase, e.Detail} }

func invalidErr(path string, now time.Time, detail error) error {
	if prefix := "file is " + memory.ErrInvalidDatabase.Error() + ": "; strings.HasPrefix(detail.Error(), prefix) {
		detail = errors.New(strings.TrimPrefix(detail.Error(), prefix)) // initSchema's wording
	}
	return &CorruptError{Path: path, Detail: detail, Fix: FixCorrupt(path, now)}
}

const (
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	boltNoFreelist  = ^uint64(0)
	pageHeaderBytes = 16
	metaBytes       = 64
)

type metaInfo struct {
	pageSize, root, freelist, pgid, txid uint64
}

// readMeta parses the meta page at off; ok is false when it does not
// validate (bolt then uses the other one).
func readMeta(f io.ReaderAt, off int64) (metaInfo, bool) {
	var b [pageHeaderBytes + metaBytes]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		return metaInfo{}, false
	}
	m := b[pageHeaderBytes:]
	le := binary.LittleEndian
	if le.Uint32(m[0:]) != boltMagic || le.Uint32(m[4:]) != boltVersion {
		return metaInfo{}, false
	}
	h := fnv.New64a()
	_, _ = h.Write(m[:56])
	if h.Sum64() != le.Uint64(m[56:]) {
		return metaInfo{}, false
	}
	return metaInfo{pageSize: uint64(le.Uint32(m[8:])), root: le.Uint64(m[16:]), freelist: le.Uint64(m[32:]),
		pgid: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}, true
}

// preflight checks, without bolt, that the file is as long as its newest
// valid header says. A file with no valid header is left to bbolt.Open, which
// reports it precisely.
func preflight(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // bbolt.Open reports it
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	m0, ok0 := readMeta(f, 0)
	var m1 metaInfo
	ok1 := false
	if ok0 {
		m1, ok1 = readMeta(f, int64(m0.pageSize))
	} else if m, ok := readMeta(f, int64(os.Getpagesize())); ok {
		m1, ok1 = m, true
	}
	// bolt uses the newer valid meta page; check both that it might use.
	var metas []metaInfo
	switch {
	case ok0 && ok1 && m1.txid > m0.txid:
		metas = []metaInfo{m1}
	case ok0:
		metas = []metaInfo{m0}
	case ok1:
		metas = []metaInfo{m1}
	default:
		return nil
	}
	for _, m := range metas {
		if m.pageSize < 512 || m.pageSize > 1<<20 {
			return fmt.Errorf("header names page size %d", m.pageSize)
		}
		need := m.pgid * m.pageSize
		if m.pgid > uint64(fi.Size())/m.pageSize+1 || uint64(fi.Size()) < need {
			return fmt.Errorf("file is truncated: it holds %d bytes but its header says %d pages of %d bytes", fi.Size(), m.pgid, m.pageSize)
		}
		if m.root >= m.pgid {
			return fmt.Errorf("header names root page %d beyond the last page %d", m.root, m.pgid)
		}
		if m.freelist != boltNoFreelist && m.freelist >= m.pgid {
			return fmt.Errorf("header names freelist page %d beyond the last page %d", m.freelist, m.pgid)
		}
	}
	return nil
}

// faultSafe runs fn with memory faults turned into panics and any panic
// into an error.
func faultSafe(what string, fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{what: what, val: r}
		}
	}()
	return fn()
}

// panicError is a panic recovered from bbolt.
type panicError struct {
	what string
	val  any
}

func (e *panicError) Error() string { return fmt.Sprintf("bolt panicked %s: %v", e.what, e.val) }

// maxCheckProblems bounds the problems Check collects.
const maxCheckProblems = 50

// verify walks the whole file and runs bolt's consistency check. It returns
// nil for a consistent file, else an error listing up to maxCheckProblems
// problems; callers wrap it in ErrInvalidDatabase.
func verify(db *bbolt.DB) error {
	err := faultSafe("reading the file", func() error {
		return db.View(func(tx *bbolt.Tx) error {
			var sink byte
			return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
				return walkBucket(b, 0, &sink)
			})
		})
	})
	if err != nil {
		return err
	}
	var errs []error
	more := 0
	err = faultSafe("checking the file", func() error {
		return db.View(func(tx *bbolt.Tx) error {
			for e := range tx.Check() {
				if len(errs) < maxCheckProblems {
					errs = append(errs, e)
				} else {
					more++
				}
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		if more > 0 {
			errs = append(errs, fmt.Errorf("… and %d more", more))
		}
		return fmt.Errorf("consistency check found %d problem(s): %w", len(errs)+more, errors.Join(errs...))
	}
	return nil
}

// walkBucket reads every key and value of b and its nested buckets (the
// first and last byte of each, so every page they lie on is touched).
func walkBucket(b *bbolt.Bucket, depth int, sink *byte) error {
	if depth > 64 {
		return errors.New("buckets nested deeper than 64 levels")
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(k) > 0 {
			*sink ^= k[0] ^ k[len(k)-1]
		}
		if v != nil {
			if len(v) > 0 {
				*sink ^= v[0] ^ v[len(v)-1]
			}
			continue
		}
		nb := b.Bucket(k)
		if nb == nil {
			return fmt.Errorf("key %q is marked as a bucket but holds none", truncKey(k))
		}
		if err := walkBucket(nb, depth+1, sink); err != nil {
			return err
		}
	}
	return nil
}

func truncKey(k []byte) []byte {
	if len(k) > 40 {
		return k[:40]
	}
	return k
}
