package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// The workspace directory is on the host (Options.TempDir): a command that
// writes file after file, each under RLIMIT_FSIZE, would fill that disk (or,
// on /dev/shm, the host's memory) until the timeout. So while the command
// runs, its directory is measured every watchEvery, in blocks actually
// used and in entries, and the sandbox is killed as soon as it holds more
// than the write-back could ever accept by a margin: twice
// workspace.max_bytes (at least max_bytes + 64 MiB, so a build that cleans
// up after itself still fits) or more entries than collect walks. The
// result is then Refused, naming the bound, and nothing is written back.

// watchEvery is how often a running command's directory is measured.
const watchEvery = 100 * time.Millisecond

// errOverDisk is the cause a watched run is canceled with.
type errOverDisk struct{ reason string }

func (e *errOverDisk) Error() string { return e.reason }

// diskBounds are what a running command's directory may hold.
func diskBounds(lim Limits) (bytes int64, entries int) {
	bytes, entries = -1, -1
	if lim.MaxBytes > 0 {
		bytes = max(2*lim.MaxBytes, lim.MaxBytes+64<<20)
	}
	if lim.MaxFiles > 0 {
		entries = 4*lim.MaxFiles + 1000
	}
	return bytes, entries
}

// watchDisk measures dir until ctx ends and calls kill with the reason when
// it holds more than lim allows. It returns when ctx is done.
func watchDisk(ctx context.Context, dir string, lim Limits, kill func(error)) {
	maxBytes, maxEntries := diskBounds(lim)
	if maxBytes < 0 && maxEntries < 0 {
		return
	}
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		used, n := diskUse(dir, maxBytes, maxEntries)
		switch {
		case maxBytes >= 0 && used > maxBytes:
			kill(&errOverDisk{fmt.Sprintf("workspace.max_bytes: the command wrote more than %d bytes to /workspace and was stopped", maxBytes)})
			return
		case maxEntries >= 0 && n > maxEntries:
			kill(&errOverDisk{fmt.Sprintf("workspace.max_files: the command made more than %d entries in /workspace and was stopped", maxEntries)})
			return
		}
	}
}

// diskUse is the space the tree at dir occupies (allocated blocks) and its
// number of entries, counted no further than past either bound (negative:
// none). Errors (a directory the command made unreadable) count nothing.
func diskUse(dir string, maxBytes int64, maxEntries int) (used int64, entries int) {
	over := func() bool {
		return maxBytes >= 0 && used > maxBytes || maxEntries >= 0 && entries > maxEntries
	}
	var walk func(string)
	walk = func(d string) {
		dh, err := os.OpenFile(d, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
		if err != nil {
			return
		}
		defer dh.Close()
		for !over() {
			des, err := dh.ReadDir(256)
			for _, de := range des {
				entries++
				full := filepath.Join(d, de.Name())
				fi, err := os.Lstat(full)
				if err != nil {
					continue
				}
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					used += st.Blocks * 512
				}
				if fi.IsDir() {
					walk(full)
				}
				if over() {
					return
				}
			}
			if err != nil { // io.EOF: the directory is done
				return
			}
		}
	}
	walk(dir)
	return used, entries
}
