package bolt

import (
	"errors"
	"fmt"
	"os"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-bot/switchboard/memory"
)

// ViewFile reads the switchboard database at path without changing it, for
// tools that copy it elsewhere (`switchboard storage migrate`). It opens the
// file read-only, sharing the lock with other readers: a running daemon,
// which holds it exclusively, makes ViewFile fail after opts.Timeout with an
// error wrapping ErrInUse. It then runs the integrity check Open runs
// (integrity.go) and calls fn in one read-only transaction, so fn sees one
// consistent snapshot.
//
// A missing file is an error wrapping fs.ErrNotExist. An empty or damaged
// file is a *CorruptError naming the damage and the fix, also when the damage
// is only reached inside fn: a bolt panic or a memory fault while fn reads
// becomes that error, never a crash. fn's own errors are returned as they
// are. Keys and values fn sees point into the file's memory map and are
// invalid once it returns.
func ViewFile(path string, opts memory.Options, fn func(tx *bbolt.Tx) error) error {
	opts = opts.WithDefaults()
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("memory: open %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("memory: open %s: not a regular file", path)
	case fi.Size() == 0:
		return invalidErr(path, opts.Now(), errors.New("the file is empty"))
	}
	if err := preflight(path); err != nil {
		return invalidErr(path, opts.Now(), err)
	}
	db, err := openBolt(path, opts, true)
	if err != nil {
		return openErr(path, opts, true, err)
	}
	defer func() { _ = db.Close() }()
	if err := verify(db); err != nil {
		return invalidErr(path, opts.Now(), err)
	}
	err = faultSafe("reading the file", func() error { return db.View(fn) })
	if p := (*panicError)(nil); errors.As(err, &p) {
		return invalidErr(path, opts.Now(), err)
	}
	return err
}
