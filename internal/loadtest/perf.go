package loadtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// startPerf records pid's CPU profile (perf record -g, 999 Hz) into out
// until the returned stop, which waits for perf to write the file.
func startPerf(pid int, out string) (stop func() error, err error) {
	var stderr bytes.Buffer
	cmd := exec.Command("perf", "record", "-F", "2999", "-g", "-p", strconv.Itoa(pid), "-o", out)
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("perf record: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// perf attaches asynchronously; a run that starts before it would
	// leave its first messages out of the profile.
	select {
	case err := <-done:
		return nil, fmt.Errorf("perf record: %w: %s", err, stderr.String())
	case <-time.After(300 * time.Millisecond):
	}
	return func() error {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-done:
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				return fmt.Errorf("perf record: %w", err)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			return errors.New("perf record did not stop")
		}
		if _, err := os.Stat(out); err != nil {
			return fmt.Errorf("perf record wrote nothing: %w: %s", err, stderr.String())
		}
		return nil
	}, nil
}
