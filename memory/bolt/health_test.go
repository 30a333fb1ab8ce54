package bolt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/switchboard-bot/switchboard/memory"
)

// Issue 27: Probe tells when the file at the store's path is no longer the
// one it writes (moved away, deleted, replaced): what it writes then is lost
// at the next start. Putting the file back and probing again ends it.
func TestProbeFollowsTheFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		induce func(t *testing.T, path, aside string)
		why    string
	}{
		{"moved away", func(t *testing.T, path, aside string) {
			if err := os.Rename(path, aside); err != nil {
				t.Fatal(err)
			}
		}, "is gone"},
		{"replaced", func(t *testing.T, path, aside string) {
			if err := os.Rename(path, aside); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte("not the database"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "another file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, path := openTest(t)
			ctx := context.Background()
			if err := s.Probe(ctx); err != nil {
				t.Fatalf("Probe on a fresh store: %v", err)
			}
			aside := path + ".aside"
			tc.induce(t, path, aside)
			err := s.Probe(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Probe = %v, want an error naming %s and %q", err, path, tc.why)
			}
			if h := s.Health(); h.OK || h.Reason != err.Error() || h.Since.IsZero() {
				t.Fatalf("Health = %+v, want unavailable with the probe's reason", h)
			}
			if err := s.KVPut(ctx, "k", []byte("v")); err != nil {
				t.Fatalf("KVPut: %v", err)
			}
			if h := s.Health(); h.OK {
				t.Fatal("a write that worked ended the outage; only a probe may")
			}
			if err := os.Rename(aside, path); err != nil {
				t.Fatal(err)
			}
			if err := s.Probe(ctx); err != nil {
				t.Fatalf("Probe with the file back: %v", err)
			}
			if h := s.Health(); !h.OK {
				t.Fatalf("Health with the file back = %+v", h)
			}
		})
	}
}

// A real operation that fails because the file cannot serve (I/O error,
// read-only file system, damaged file) marks the store unavailable at once;
// a full disk and other errors are left to the writers' retries.
func TestFailedOperationMarksUnavailable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		down bool
	}{
		{fmt.Errorf("memory: commit: %w", syscall.EIO), true},
		{fmt.Errorf("memory: commit: %w", syscall.EROFS), true},
		{fmt.Errorf("memory: read: %w", memory.ErrInvalidDatabase), true},
		{fmt.Errorf("memory: commit: %w", syscall.ENOSPC), false},
		{fmt.Errorf("memory: get: %w", memory.ErrNotFound), false},
		{errors.New("memory: put: empty key"), false},
	} {
		s, _, _ := openTest(t)
		if got := s.noteFailure(tc.err); got != tc.err {
			t.Errorf("noteFailure(%v) = %v, want the error itself", tc.err, got)
		}
		if h := s.Health(); h.OK == tc.down {
			t.Errorf("after %v: Health = %+v, want unavailable=%v", tc.err, h, tc.down)
		}
	}
}

// A closed store or a canceled probe records nothing.
func TestProbeClosedOrCanceled(t *testing.T) {
	s, _, _ := openTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Probe(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Probe(canceled) = %v", err)
	}
	_ = s.Close()
	if err := s.Probe(context.Background()); !errors.Is(err, memory.ErrClosed) {
		t.Errorf("Probe after Close = %v, want ErrClosed", err)
	}
	if h := s.Health(); !h.OK {
		t.Errorf("Health = %+v, want nothing recorded", h)
	}
}
