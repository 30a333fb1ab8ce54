package bolt

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-bot/switchboard/memory"
)

// countSessions is a ViewFile reader: how many sessions the file holds.
func countSessions(n *int) func(tx *bbolt.Tx) error {
	return func(tx *bbolt.Tx) error {
		*n = 0
		return tx.Bucket(bSessions).ForEachBucket(func([]byte) error { *n++; return nil })
	}
}

// Issue 27 break 4: ViewFile (what `storage migrate` reads through) makes
// Open's integrity check on a read-only file and turns a bolt panic while
// the reader runs into a *CorruptError; a healthy file reads and is left
// byte for byte as it was.
func TestViewFile(t *testing.T) {
	path, size := corruptFixture(t)
	before, err := os.ReadFile(path)
	mustNo(t, err)
	var n int
	if err := ViewFile(path, memory.Options{}, countSessions(&n)); err != nil || n != 150 {
		t.Fatalf("healthy file: %d sessions, err %v; want 150", n, err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("ViewFile changed the file")
	}

	held := openAt(t, path, testOpts(newClock()))
	err = ViewFile(path, memory.Options{Timeout: 50 * time.Millisecond}, countSessions(&n))
	if !errors.Is(err, memory.ErrInUse) {
		t.Errorf("file held by a store: %v, want ErrInUse", err)
	}
	mustNo(t, held.Close())

	// A panic inside bolt while the reader runs (damage the check missed).
	err = ViewFile(path, memory.Options{}, func(*bbolt.Tx) error { panic("assertion failed: Page expected to be: 9") })
	var ce *CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "Page expected to be") {
		t.Errorf("panic while reading: %v, want a *CorruptError naming it", err)
	}
	// The reader's own errors come back as they are.
	mine := errors.New("mine")
	if err := ViewFile(path, memory.Options{}, func(*bbolt.Tx) error { return mine }); err != mine {
		t.Errorf("reader's error: %v, want it unchanged", err)
	}

	if err := ViewFile(path+".nope", memory.Options{}, countSessions(&n)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	empty := filepath.Join(t.TempDir(), FileName)
	mustNo(t, os.WriteFile(empty, nil, 0o600))
	if err := ViewFile(empty, memory.Options{}, countSessions(&n)); !errors.As(err, &ce) || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty file: %v, want a *CorruptError", err)
	}
	if fi, _ := os.Stat(empty); fi.Size() != 0 {
		t.Error("ViewFile wrote into an empty file")
	}

	mustNo(t, os.Truncate(path, size/2))
	err = ViewFile(path, memory.Options{}, func(*bbolt.Tx) error { t.Error("the reader ran on a damaged file"); return nil })
	if !errors.As(err, &ce) || !errors.Is(err, memory.ErrInvalidDatabase) || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("truncated file: %v, want a *CorruptError saying so", err)
	}
}
