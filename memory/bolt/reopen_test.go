package bolt

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestReopenWritesNothing: opening a database that already has its schema
// leaves the file as it was. initSchema ran a write transaction on every
// start — a commit, and its fsyncs, before the daemon could poll — which on
// a busy disk held a restart up for ~100 ms (BENCHMARKS.md, "Issue 35").
func TestReopenWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", FileName)
	opts := testOpts(newClock())
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, opts)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("opening an existing database changed the file")
	}
}
