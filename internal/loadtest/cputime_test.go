//go:build linux

package loadtest

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// A reply costs about a millisecond of the daemon's CPU; a run of 200 replies
// is ~200 ms. CPU time in 10 ms clock ticks (/proc/<pid>/stat) sees a 1 ms
// piece of work as 0 or 10 ms, so "CPU per reply" moved by ±0.05–0.1 ms from
// run to run on the same binary. CPUTime must resolve it.
func TestCPUTimeResolvesAMillisecond(t *testing.T) {
	before, err := CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	spin(2 * time.Millisecond)
	after, err := CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	d := after - before
	// The spin used ≥ 2 ms of CPU; a tick-based reading says 0, 10 or 20 ms.
	if d < 2*time.Millisecond || d%(10*time.Millisecond) == 0 {
		t.Fatalf("CPU time across 2 ms of work: %v (a clock-tick reading, not the CPU used)", d)
	}
}

// spin burns at least d of this thread's CPU time (not wall time: a busy
// machine may deschedule it).
func spin(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, err := threadCPU()
	if err != nil {
		panic(err)
	}
	x := 0
	for {
		for i := 0; i < 10000; i++ {
			x += i ^ x
		}
		now, err := threadCPU()
		if err != nil {
			panic(err)
		}
		if now-start >= d {
			sink = x
			return
		}
	}
}

var sink int
