package sandbox

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A daemon killed in the middle of a command (SIGKILL, OOM, power) cannot
// remove the command's run directory: on /dev/shm that is memory lost until
// the next boot. So each run holds an exclusive flock on a file in its
// directory for as long as it lives, and a new Runner removes the run
// directories under its TempDir whose lock nobody holds (the process that
// made them is gone). A directory without a lock file is removed only when
// it is older than staleGrace (it may be a run being set up right now).

const (
	runPrefix  = "switchboard-exec-"
	lockName   = ".lock"
	staleGrace = time.Minute
)

// lockRun creates and locks base's lock file; closing it releases the lock.
func lockRun(base string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(base, lockName), os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// sweepStale removes the run directories under dir left by dead processes
// and returns how many it removed.
func sweepStale(dir string, now time.Time, log *slog.Logger) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), runPrefix) {
			continue
		}
		base := filepath.Join(dir, e.Name())
		f, err := os.OpenFile(filepath.Join(base, lockName), os.O_RDWR|syscall.O_NOFOLLOW, 0)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			fi, serr := os.Lstat(base)
			if serr != nil || now.Sub(fi.ModTime()) < staleGrace {
				continue
			}
		case err != nil:
			continue
		default:
			if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
				f.Close() // a live run
				continue
			}
		}
		if k := killLeftovers(base); k > 0 {
			log.Warn("exec: killed sandbox processes a dead daemon left running", "count", k, "dir", base)
		}
		if rerr := removeAll(base); rerr != nil {
			log.Warn("exec: could not remove a dead run's directory", "dir", base, "err", rerr)
		} else {
			n++
		}
		if f != nil {
			f.Close()
		}
	}
	if n > 0 {
		log.Info("exec: removed run directories of a process that died mid-command", "count", n, "dir", dir)
	}
	return n
}

// killLeftovers SIGKILLs the processes whose command line names the dead
// run directory base (bwrap binds base's workspace): a daemon SIGKILLed
// while bwrap was still setting up, before bwrap's --die-with-parent and
// the watchdog (watchdogScript) were armed, can leave the sandbox's init
// waiting for good. Killing it ends its pid namespace. It returns how many
// it killed.
func killLeftovers(base string) int {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	needle := []byte(base + "/")
	killed := 0
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, needle) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	return killed
}
