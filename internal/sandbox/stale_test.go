package sandbox

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A daemon killed mid-command left its run directory (on /dev/shm: memory)
// behind for good. A new Runner removes those whose lock nobody holds,
// keeps live runs' and fresh ones still being set up.
func TestNewSweepsDeadRunsDirectories(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, lock bool) string {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "file"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if lock {
			if err := os.WriteFile(filepath.Join(p, lockName), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	dead := mk(runPrefix+"dead", true)
	live := mk(runPrefix+"live", true)
	held, err := lockRun(live)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	fresh := mk(runPrefix+"fresh", false)
	old := mk(runPrefix+"old", false)
	past := time.Now().Add(-2 * staleGrace)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	other := mk("not-ours", true)

	if _, err := New(Options{TempDir: dir}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{dead: false, live: true, fresh: true, old: false, other: true} {
		_, err := os.Stat(p)
		if got := err == nil; got != want {
			t.Errorf("%s exists = %v, want %v", filepath.Base(p), got, want)
		}
	}
}
