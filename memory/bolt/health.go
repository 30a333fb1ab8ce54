package bolt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-bot/switchboard/memory"
)

// Compile-time check that *Store reports its availability (memory.Prober).
var _ memory.Prober = (*Store)(nil)

// kProbe is the meta key Probe writes.
var kProbe = []byte("probe")

// Probe checks that the file at the store's path is still the one it has
// open, and that it takes a small write. A file moved, deleted or replaced
// underneath the running store keeps working, but everything written to it
// from then on is lost at the next start; a failing or read-only disk
// refuses the write. A failure marks the store unavailable, a success
// available again. ctx is checked first (bolt's writes cannot be
// interrupted).
func (s *Store) Probe(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: probe: %w", err)
	}
	err := s.checkFile()
	if err == nil {
		stamp := []byte(s.now().UTC().Format(time.RFC3339Nano))
		err = s.update(ctx, "probe", func(tx *bbolt.Tx) error { return tx.Bucket(bMeta).Put(kProbe, stamp) })
	}
	switch {
	case err == nil:
		if outage, ended := s.health.Recover(s.now()); ended {
			s.log.Info("data store available again", "store", s.path, "unavailable_for", outage)
		}
		return nil
	case errors.Is(err, memory.ErrClosed), errors.Is(err, context.Canceled):
		return err
	}
	s.unavailable(err)
	return err
}

// Health reports whether the last probe succeeded and no operation since
// failed for want of a working file.
func (s *Store) Health() memory.Health { return s.health.Health() }

// checkFile reports an error when s.path no longer names the file opened.
func (s *Store) checkFile() error {
	at, err := os.Stat(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("memory: probe: the database file %s is gone (moved or deleted while open): what is written now is lost at the next start; put it back or restart", s.path)
	case err != nil:
		return fmt.Errorf("memory: probe: %w", err)
	case s.opened != nil && !os.SameFile(s.opened, at):
		return fmt.Errorf("memory: probe: %s is now another file (replaced while open): what is written now is lost at the next start; put the original back or restart", s.path)
	}
	return nil
}

// unavailable marks the store unavailable because of err, logging the start
// of an outage once.
func (s *Store) unavailable(err error) {
	if s.health.Fail(s.now(), err.Error()) {
		s.log.Error("data store unavailable; /readyz answers 503 until a probe succeeds", "store", s.path, "err", err)
	}
}

// noteFailure marks the store unavailable at once when a real operation
// failed because the file itself cannot serve: an I/O error, a read-only
// file system, a damaged file. A full disk is left to the writers' own
// retries (a small write may still fit), and the probe. It returns err.
func (s *Store) noteFailure(err error) error {
	if errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EROFS) || errors.Is(err, memory.ErrInvalidDatabase) {
		s.unavailable(err)
	}
	return err
}
