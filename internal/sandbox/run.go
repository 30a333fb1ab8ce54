package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Result is what one command did.
type Result struct {
	ExitCode  int    // the command's exit status; 128+N when signal N ended it
	Stdout    string // capped: head and tail of Options.MaxOutput, the cut marked
	Stderr    string
	TimedOut  bool // exec.timeout ended it
	OutputCut bool // stdout or stderr was cut
	// Changed and Deleted are the write-back: new or modified regular files
	// and snapshot paths gone. Both are empty when Refused is set.
	Changed []File
	Deleted []string
	// Ignored lists entries left in the workspace that are not regular
	// files (symlinks, fifos, sockets, devices, unusable names): never
	// written back.
	Ignored  []string
	Refused  string // the workspace bound the result broke: nothing is written back
	Duration time.Duration
}

// Run runs command with /bin/sh -c in a fresh sandbox over the snapshot
// files and returns its output and the write-back, bounded by lim. An error
// means the command could not run (sandbox unavailable, a bad snapshot, the
// host out of resources) or ctx was canceled (then nothing is written
// back); a failing command is a Result with its exit code.
func (r *Runner) Run(ctx context.Context, command string, files []File, lim Limits) (Result, error) {
	if strings.TrimSpace(command) == "" {
		return Result{}, errors.New("exec: empty command")
	}
	if strings.ContainsRune(command, 0) {
		return Result{}, errors.New("exec: command contains a NUL byte")
	}
	if err := checkFiles(files); err != nil {
		return Result{}, fmt.Errorf("exec: %w", err)
	}
	if err := r.ready(ctx); err != nil {
		return Result{}, err
	}
	return r.run(ctx, command, files, lim, false)
}

// run is one command in a fresh directory; check marks the probe of Check.
func (r *Runner) run(ctx context.Context, command string, files []File, lim Limits, check bool) (res Result, err error) {
	bwrap := r.o.Mode == ModeBwrap
	owner := -1 // host uid the run's files belong to, -1 = ours
	if bwrap && r.asRoot {
		owner = r.o.UID
	}
	base, err := os.MkdirTemp(r.o.TempDir, runPrefix)
	if err != nil {
		return Result{}, fmt.Errorf("exec: run directory: %w", err)
	}
	lock, lerr := lockRun(base) // stale.go: a dead daemon's directory is swept
	defer func() {
		if rerr := removeAll(base); rerr != nil {
			r.log.Warn("exec: could not remove the run directory", "dir", base, "err", rerr)
		}
		if lock != nil {
			lock.Close()
		}
	}()
	if lerr != nil {
		return Result{}, fmt.Errorf("exec: run directory: %w", lerr)
	}
	work := filepath.Join(base, "workspace")
	if err := os.Mkdir(work, 0o700); err != nil {
		return Result{}, fmt.Errorf("exec: run directory: %w", err)
	}
	if owner >= 0 {
		for _, d := range []string{base, work} {
			if err := os.Chown(d, owner, r.o.GID); err != nil {
				return Result{}, fmt.Errorf("exec: run directory: %w", err)
			}
		}
	}
	if err := materialize(work, files, owner, r.o.GID); err != nil {
		return Result{}, fmt.Errorf("exec: %w", err)
	}

	var cmd *exec.Cmd
	var info *os.File // read end of bwrap's --info-fd
	timeoutCtx, cancel := context.WithTimeout(ctx, r.timeoutFor(ctx))
	defer cancel()
	// The disk watcher (watch.go) stops a command with a cause.
	runCtx, stopRun := context.WithCancelCause(timeoutCtx)
	defer stopRun(nil)
	if bwrap {
		path, err := r.bwrapPath()
		if err != nil {
			return Result{}, &UnavailableError{Reason: "bubblewrap (bwrap) not found", Fix: fixInstall}
		}
		passwd, group := passwdFiles()
		if err := os.WriteFile(filepath.Join(base, "passwd"), passwd, 0o644); err != nil {
			return Result{}, fmt.Errorf("exec: %w", err)
		}
		if err := os.WriteFile(filepath.Join(base, "group"), group, 0o644); err != nil {
			return Result{}, fmt.Errorf("exec: %w", err)
		}
		cmd = exec.CommandContext(runCtx, path, r.bwrapArgs(base, work, command, lim)...)
		ir, iw, err := os.Pipe()
		if err != nil {
			return Result{}, fmt.Errorf("exec: %w", err)
		}
		defer ir.Close()
		defer iw.Close()
		// The watchdog's pipe (watchdogScript): the sandbox gets the read
		// end as fd 4, the daemon keeps the only write end until Run
		// returns, so the daemon's death — however sudden — ends the run.
		wr, ww, err := os.Pipe()
		if err != nil {
			return Result{}, fmt.Errorf("exec: %w", err)
		}
		defer wr.Close()
		defer ww.Close()
		info = ir
		cmd.ExtraFiles = []*os.File{iw, wr}
		cmd.Env = []string{}
	} else {
		args := []string{"/bin/sh", "-c", command}
		if _, err := os.Stat(r.o.Prlimit); err == nil {
			// No --nproc: outside a user namespace it would count every
			// process and thread of the daemon's user.
			args = r.limitArgs(command, false, lim)
		}
		cmd = exec.CommandContext(runCtx, args[0], args[1:]...)
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + work, "LANG=C.UTF-8", "USER=sandbox"}
	}
	cmd.Dir = work
	if bwrap {
		cmd.Dir = base
	}
	stdout, stderr := newCapBuffer(r.o.MaxOutput), newCapBuffer(r.o.MaxOutput)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if owner >= 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{
			Uid: uint32(owner), Gid: uint32(r.o.GID), Groups: []uint32{},
		}
	}
	var pid1 pidHandle
	pid1.fd = -1
	cmd.Cancel = func() error {
		// Kill the sandbox's pid 1: the kernel then kills everything in its
		// pid namespace, and bwrap exits only once that is done. Before bwrap
		// said who its pid 1 is, kill bwrap's process group.
		if pid1.kill() {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 5 * time.Second

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("exec: start: %w", err)
	}
	if info != nil {
		cmd.ExtraFiles[0].Close()
		cmd.ExtraFiles[1].Close() // the watchdog's read end lives on in the sandbox only
		// Read bwrap's pid 1 before Wait reaps bwrap, so its parent can be
		// checked (no reused pid is ever signalled).
		var msg struct {
			ChildPid int `json:"child-pid"`
		}
		if json.NewDecoder(info).Decode(&msg) == nil && msg.ChildPid > 0 {
			pid1.open(msg.ChildPid, cmd.Process.Pid)
		}
	}
	endWatch := func() {}
	if !check {
		watchCtx, stopWatch := context.WithCancel(runCtx)
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			watchDisk(watchCtx, work, lim, stopRun)
		}()
		endWatch = func() { stopWatch(); <-watched }
	}
	waitErr := cmd.Wait()
	endWatch()
	// On every path bwrap's exit follows its pid 1's, but if bwrap itself
	// had to be killed, wait here until the sandbox is gone too.
	if !pid1.wait(10 * time.Second) {
		r.log.Warn("exec: sandbox processes still exiting after 10s")
	}
	pid1.close()
	res.Duration = time.Since(start)
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	res.OutputCut = stdout.cut() || stderr.cut()
	res.ExitCode = exitCode(cmd, waitErr)
	if ctx.Err() != nil {
		return res, fmt.Errorf("exec: canceled: %w", context.Cause(ctx))
	}
	res.TimedOut = errors.Is(timeoutCtx.Err(), context.DeadlineExceeded)
	var over *errOverDisk
	if errors.As(context.Cause(runCtx), &over) && !res.TimedOut {
		r.log.Info("exec: stopped over the workspace bounds", "bound", over.reason)
		res.Refused = over.reason
		return res, nil
	}
	if waitErr != nil && res.ExitCode < 0 && !res.TimedOut {
		return res, fmt.Errorf("exec: %w", waitErr)
	}
	if check {
		return res, nil
	}
	wb, err := collect(work, files, lim)
	if err != nil {
		return res, fmt.Errorf("exec: %w", err)
	}
	res.Changed, res.Deleted, res.Ignored, res.Refused = wb.Changed, wb.Deleted, wb.Ignored, wb.Refused
	if res.Refused != "" {
		r.log.Info("exec: write-back refused", "bound", res.Refused)
	}
	return res, nil
}

// exitCode is the status like a shell reports it: 128+N for signal N.
func exitCode(cmd *exec.Cmd, waitErr error) int {
	st := cmd.ProcessState
	if st == nil {
		return -1
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}
