package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The daemon as a child process: TestDaemonKilledAsTheCommandStarts runs
// this test binary with SB_ORPHAN_MARK set, it runs a long command and is
// SIGKILLed meanwhile.
func TestMain(m *testing.M) {
	if mark := os.Getenv("SB_ORPHAN_MARK"); mark != "" {
		r, err := New(Options{Timeout: 10 * time.Minute})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		_, err = r.Run(context.Background(), "sleep 600 # "+mark, nil, Limits{})
		fmt.Fprintln(os.Stderr, "run ended:", err)
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// TestDaemonKilledAsTheCommandStarts: a daemon SIGKILLed just as bwrap has
// started (the command's processes already visible) used to leave bwrap and
// the command running, reparented to init, for good. Whenever the daemon
// dies, nothing of the command outlives the next start (the watchdog ends
// a started command at once; the sweep of dead runs kills a sandbox still
// being set up).
func TestDaemonKilledAsTheCommandStarts(t *testing.T) {
	bwrapRunner(t, Options{}) // skips without bubblewrap
	for i, delay := range []time.Duration{0, 0, 0, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond} {
		mark := marker(t)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "SB_ORPHAN_MARK="+mark)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the command's processes", func() bool { return len(processesWith(t, mark)) > 0 })
		time.Sleep(delay)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		// The next daemon's Runner sweeps what a dead one left (stale.go):
		// the watchdog ends a started command at once, and a sandbox killed
		// while bwrap was still setting up is killed by this sweep.
		if _, err := New(Options{}); err != nil {
			t.Fatal(err)
		}
		// Allow the process tree time to unwind, then require it gone.
		deadline := time.Now().Add(20 * time.Second)
		for len(processesWith(t, mark)) > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if left := processesWith(t, mark); len(left) > 0 {
			t.Errorf("run %d (killed %v after the command appeared): processes outlived the daemon:\n%s", i, delay, strings.Join(left, "\n"))
			killMarked(t, mark)
		}
	}
}

// waitUntil polls cond (the event is another process's state) for up to a
// minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// killMarked kills the bwrap processes a failed run left behind.
func killMarked(t *testing.T, mark string) {
	for _, p := range processesWith(t, mark) {
		pid, _, _ := strings.Cut(p, ":")
		if strings.Contains(p, "bwrap") {
			var n int
			if _, err := fmt.Sscan(pid, &n); err == nil {
				if pr, err := os.FindProcess(n); err == nil {
					_ = pr.Kill()
				}
			}
		}
	}
}
