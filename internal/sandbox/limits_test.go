package sandbox

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLimitsStopRunawayCommands: every limit the issue names stops what it
// is meant to stop, and nothing of the command outlives Run.
func TestLimitsStopRunawayCommands(t *testing.T) {
	tests := []struct {
		name     string
		opts     Options
		cmd      string
		timedOut bool
		anyEnd   bool   // ended by the timeout or by its own failure
		exit     int    // expected exit code; 0 = any non-zero
		stderr   string // expected in stderr
		check    func(t *testing.T, res Result)
	}{
		{
			name: "fork bomb", opts: Options{MaxProcesses: 16, Timeout: 3 * time.Second},
			// dash gives up at its first failed fork (exit 2) unless the
			// timeout comes first; either way the host never sees more
			// than 16 processes of it.
			cmd:    "bomb() { bomb | bomb & }; while :; do bomb; done",
			anyEnd: true, stderr: "fork",
		},
		{
			name: "allocate 20 GB", opts: Options{Memory: 256 << 20},
			cmd:    `python3 -c 'b = bytearray(20 * 1024**3); print("ALLOCATED")'`,
			stderr: "MemoryError",
			check: func(t *testing.T, res Result) {
				if strings.Contains(res.Stdout, "ALLOCATED") {
					t.Error("20 GB were allocated")
				}
			},
		},
		{
			name: "write 10 GB", opts: Options{FileSize: 1 << 20},
			cmd:  "head -c 10G /dev/zero > big.bin; echo status=$?",
			exit: 0, check: func(t *testing.T, res Result) {
				// head was killed by SIGXFSZ (153); the shell went on.
				if !strings.Contains(res.Stdout, "status=153") {
					t.Errorf("head was not stopped by the file size limit: %q", res.Stdout)
				}
				files := fileMap(res.Changed)
				if got := len(files["big.bin"]); got != 1<<20 {
					t.Errorf("big.bin is %d bytes, want the 1 MiB limit", got)
				}
			},
		},
		{
			name: "while true", opts: Options{Timeout: 2 * time.Second},
			cmd:      "echo started; while true; do :; done",
			timedOut: true,
			check: func(t *testing.T, res Result) {
				if !strings.HasPrefix(res.Stdout, "started") {
					t.Errorf("output before the timeout lost: %q", res.Stdout)
				}
			},
		},
		{
			name: "cpu seconds", opts: Options{CPU: time.Second},
			cmd:  "while true; do :; done",
			exit: 128 + 24, // SIGXCPU
		},
		{
			name: "background process", opts: Options{},
			cmd: `python3 -c 'import time; time.sleep(1000)' >/dev/null 2>&1 &
			      sleep 1000 &
			      echo launched`,
		},
		{
			name: "background process at timeout", opts: Options{Timeout: 2 * time.Second},
			cmd: `python3 -c 'import time; time.sleep(1000)' >/dev/null 2>&1 </dev/null &
			      setsid sleep 1000 >/dev/null 2>&1 &
			      sleep 1000`,
			timedOut: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := bwrapRunner(t, tc.opts)
			mark := marker(t)
			res, err := r.Run(context.Background(), tc.cmd+"\n# "+mark, nil, Limits{})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.TimedOut != tc.timedOut && !tc.anyEnd {
				t.Errorf("TimedOut = %v, want %v (exit %d, stderr %q)", res.TimedOut, tc.timedOut, res.ExitCode, res.Stderr)
			}
			switch {
			case tc.exit != 0 && res.ExitCode != tc.exit:
				t.Errorf("exit code %d, want %d (stderr %q)", res.ExitCode, tc.exit, res.Stderr)
			case tc.exit == 0 && (tc.timedOut || tc.anyEnd || tc.stderr != "") && res.ExitCode == 0:
				t.Errorf("exit code 0, want a failure")
			}
			if !strings.Contains(res.Stderr, tc.stderr) {
				t.Errorf("stderr lacks %q: %q", tc.stderr, res.Stderr)
			}
			if tc.check != nil {
				tc.check(t, res)
			}
			assertNoSurvivors(t, mark)
			// The host still forks.
			if err := exec.Command("true").Run(); err != nil {
				t.Errorf("host cannot run a process after the test: %v", err)
			}
		})
	}
}

// TestCancelReapsTheSandbox: a canceled turn (/stop, shutdown) ends the
// command at once, leaves no process and writes nothing back.
func TestCancelReapsTheSandbox(t *testing.T) {
	r := bwrapRunner(t, Options{})
	mark := marker(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type out struct {
		res Result
		err error
	}
	done := make(chan out, 1)
	cmd := "echo x > new.txt; sleep 1000 >/dev/null 2>&1 & echo running; sleep 1000 # " + mark
	go func() {
		res, err := r.Run(ctx, cmd, nil, Limits{})
		done <- out{res, err}
	}()
	// Cancel once the command is seen running on the host.
	for len(processesWith(t, "sleep 1000 # "+mark)) == 0 {
		select {
		case o := <-done:
			t.Fatalf("Run returned before cancel: %+v %v", o.res, o.err)
		default:
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	o := <-done
	if !errors.Is(o.err, context.Canceled) {
		t.Errorf("Run error = %v, want context.Canceled", o.err)
	}
	if len(o.res.Changed) != 0 {
		t.Errorf("a canceled run wrote back %v", fileMap(o.res.Changed))
	}
	assertNoSurvivors(t, mark)
}

// TestConcurrentRuns: 20 commands at once each see their own workspace and
// get their own output.
func TestConcurrentRuns(t *testing.T) {
	r := bwrapRunner(t, Options{})
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := strings.Repeat("x", i+1)
			files := []File{{Path: "in.txt", Data: []byte(id), Mode: 0o644}}
			res, err := r.Run(context.Background(), "cat in.txt; ls; cat in.txt > out.txt", files, Limits{MaxFiles: 10})
			switch {
			case err != nil:
				errs <- err.Error()
			case res.Stdout != id+"in.txt\n":
				errs <- "run " + id + " saw " + res.Stdout
			case len(res.Changed) != 1 || string(res.Changed[0].Data) != id:
				errs <- "run " + id + " wrote back " + strings.Join(keys(fileMap(res.Changed)), ",")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
