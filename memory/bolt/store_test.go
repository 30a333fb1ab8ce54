package bolt

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/storetest"
	bbolt "go.etcd.io/bbolt"
)

// TestConformance runs the memory.Store conformance suite against bolt: the
// factory keeps the file at <dir>/switchboard.db, so reopening dir reopens it.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(_ testing.TB, dir string, opts memory.Options) (memory.Store, error) {
		return Open(filepath.Join(dir, FileName), opts)
	})
}

func newClock() *storetest.Clock { return storetest.NewClock() }

// testOpts are fast options: no fsync, short batch delay, injected clock.
func testOpts(clk *storetest.Clock) memory.Options { return storetest.TestOptions(clk) }

func openAt(t testing.TB, path string, opts memory.Options) *Store {
	t.Helper()
	s, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func openTest(t testing.TB) (*Store, *storetest.Clock, string) {
	t.Helper()
	clk := newClock()
	path := filepath.Join(t.TempDir(), "data", FileName)
	return openAt(t, path, testOpts(clk)), clk, path
}

func TestOpenCreatesPrivateDirAndFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "data")
	path := filepath.Join(dir, FileName)
	s := openAt(t, path, testOpts(newClock()))
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
	for _, c := range []struct {
		path string
		want os.FileMode
	}{{dir, 0o700}, {path, 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != c.want {
			t.Errorf("%s mode = %o, want %o", c.path, got, c.want)
		}
	}
}

func TestOpenRejectsInvalidFiles(t *testing.T) {
	// A valid switchboard file whose two meta pages were overwritten.
	brokenMeta := func(t *testing.T, path string) {
		s := openAt(t, path, testOpts(newClock()))
		mustNo(t, s.AppendTurn(context.Background(), "a:1", memory.Turn{ID: "x", Messages: []memory.Message{{Role: memory.RoleUser, Content: "x"}}}))
		mustNo(t, s.Close())
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		mustNo(t, err)
		defer f.Close()
		_, err = f.WriteAt(bytes.Repeat([]byte{0xAB}, 2*os.Getpagesize()), 0)
		mustNo(t, err)
	}
	foreignBolt := func(t *testing.T, path string) {
		db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
		mustNo(t, err)
		mustNo(t, db.Update(func(tx *bbolt.Tx) error {
			_, err := tx.CreateBucket([]byte("widgets"))
			return err
		}))
		mustNo(t, db.Close())
	}
	writeFile := func(data []byte) func(*testing.T, string) {
		return func(t *testing.T, path string) { mustNo(t, os.WriteFile(path, data, 0o600)) }
	}
	cases := []struct {
		name   string
		setup  func(*testing.T, string)
		detail string // extra text the error must contain
	}{
		{"text file", writeFile([]byte("this is a config file, not a database\n")), ""},
		{"random bytes", writeFile(bytes.Repeat([]byte("\x13\x37garbage"), 4096)), ""},
		{"broken meta pages", brokenMeta, ""},
		{"another program's bolt file", foreignBolt, "widgets"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			c.setup(t, path)
			s, err := Open(path, testOpts(newClock()))
			if err == nil {
				_ = s.Close()
				t.Fatal("Open succeeded on an invalid file")
			}
			if !errors.Is(err, memory.ErrInvalidDatabase) {
				t.Errorf("err = %v, want memory.ErrInvalidDatabase", err)
			}
			t.Log(err)
			msg := err.Error()
			if !strings.Contains(msg, path) || !strings.Contains(msg, "is not a valid switchboard database") || !strings.Contains(msg, c.detail) {
				t.Errorf("error text %q should name the file, say it is not a valid switchboard database and mention %q", msg, c.detail)
			}
		})
	}
}

func TestOpenLockedInSameProcess(t *testing.T) {
	s, clk, path := openTest(t)
	opts := testOpts(clk)
	opts.Timeout = 50 * time.Millisecond
	s2, err := Open(path, opts)
	if err == nil {
		_ = s2.Close()
		t.Fatal("second Open of a locked file succeeded")
	}
	if !errors.Is(err, memory.ErrInUse) || !strings.Contains(err.Error(), "is in use by another switchboard process") || !strings.Contains(err.Error(), path) {
		t.Errorf("err = %v, want a clear in-use error naming the file", err)
	}
	mustNo(t, s.Close())
	s3 := openAt(t, path, opts) // lock released by Close
	mustNo(t, s3.Close())
}

func mustNo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
