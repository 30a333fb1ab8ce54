package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ModuleRoot finds the directory holding go.mod, walking up from the working
// directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// BuildBinary builds cmd/switchboard into dir and returns the binary's path.
func BuildBinary(ctx context.Context, dir string) (string, error) {
	return build(ctx, dir, nil)
}

// BuildRelease builds cmd/switchboard as the Dockerfile and CI do
// (CGO_ENABLED=0, -trimpath, stripped): a static binary, so idle memory
// holds no libc, as in the shipped image.
func BuildRelease(ctx context.Context, dir string) (string, error) {
	return build(ctx, dir, []string{"CGO_ENABLED=0"}, "-trimpath", "-ldflags=-s -w")
}

func build(ctx context.Context, dir string, env []string, flags ...string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "switchboard")
	args := append(append([]string{"build"}, flags...), "-o", out, "./cmd/switchboard")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	return out, nil
}

// FreeAddr returns a loopback address with a port free at the time of the call.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr, nil
}

// Proc is a running switchboard child process.
type Proc struct {
	Cmd     *exec.Cmd
	Addr    string // server.listen
	Started time.Time

	out    *syncBuffer
	done   chan struct{}
	err    error
	stopMu sync.Once
}

// syncBuffer collects the child's output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// StartProc runs `bin run --config cfg --listen addr` with env added to a
// minimal environment. Output (stdout and stderr) is kept for Output.
func StartProc(bin, cfg, addr string, env []string, extraArgs ...string) (*Proc, error) {
	args := append([]string{"run", "--config", cfg, "--listen", addr}, extraArgs...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir()}, env...)
	p := &Proc{Cmd: cmd, Addr: addr, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.Stdin = nil
	p.Started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid is the child's process id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Output is everything the child wrote so far.
func (p *Proc) Output() string { return p.out.String() }

// Done is closed when the child exited; Err is then its exit error.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the exit error once Done is closed.
func (p *Proc) Err() error {
	<-p.done
	return p.err
}

// WaitReady polls GET /readyz every millisecond until it answers 200 and
// returns the time from process start to that answer.
func (p *Proc) WaitReady(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: false}}
	url := "http://" + p.Addr + "/readyz"
	last := ""
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(p.Started), nil
			}
			last = strings.TrimSpace(b.String())
		}
		select {
		case <-p.done:
			return 0, fmt.Errorf("daemon exited before ready (%v):\n%s", p.err, p.Output())
		case <-ctx.Done():
			return 0, fmt.Errorf("daemon not ready after %v (last /readyz: %q):\n%s", timeout, last, p.Output())
		case <-time.After(time.Millisecond):
		}
	}
}

// Kill sends SIGKILL and waits for the exit; idempotent.
func (p *Proc) Kill() {
	p.stopMu.Do(func() { _ = p.Cmd.Process.Signal(syscall.SIGKILL) })
	<-p.done
}

// Stop sends SIGTERM, waits up to grace, then SIGKILLs; idempotent.
func (p *Proc) Stop(grace time.Duration) error {
	p.stopMu.Do(func() {
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = p.Cmd.Process.Signal(syscall.SIGKILL)
		}
	})
	<-p.done
	return p.err
}

// RSSKiB reads VmRSS of pid from /proc/<pid>/status.
func RSSKiB(pid int) (int64, error) {
	v, err := statusFields(pid, "VmRSS")
	if err != nil {
		return 0, err
	}
	return v["VmRSS"], nil
}

// RSSBreakdown reads RssAnon (heap, stacks, runtime) and RssFile (mapped
// binary text and data) of pid, in KiB.
func RSSBreakdown(pid int) (anon, file int64, err error) {
	v, err := statusFields(pid, "RssAnon", "RssFile")
	if err != nil {
		return 0, 0, err
	}
	return v["RssAnon"], v["RssFile"], nil
}

func statusFields(pid int, names ...string) (map[string]int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil, fmt.Errorf("read RSS: %w", err)
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		for _, want := range names {
			if name != want {
				continue
			}
			if fields := strings.Fields(rest); len(fields) > 0 {
				if v, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
					out[name] = v
				}
			}
		}
	}
	for _, want := range names {
		if _, ok := out[want]; !ok {
			return nil, fmt.Errorf("no %s in /proc/%d/status", want, pid)
		}
	}
	return out, nil
}

// Mapping is the resident memory of one mapped file (or kind of anonymous
// mapping: "[heap]", "[stack]", "[anon]") of a process, summed over its
// mappings.
type Mapping struct {
	Name    string
	RSSKiB  int64
	AnonKiB int64 // of which anonymous (written private pages, heap)
}

// Mappings reads /proc/<pid>/smaps and returns RSS per mapped file, largest
// first: which part of the binary (or which library) an idle daemon keeps
// resident.
func Mappings(pid int) ([]Mapping, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/smaps")
	if err != nil {
		return nil, fmt.Errorf("read smaps: %w", err)
	}
	defer f.Close()
	byName := map[string]*Mapping{}
	var cur *Mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if !strings.HasSuffix(fields[0], ":") { // a mapping's header: range perms offset dev inode [path]
			name := "[anon]"
			if len(fields) >= 6 {
				name = strings.Join(fields[5:], " ")
			}
			if cur = byName[name]; cur == nil {
				cur = &Mapping{Name: name}
				byName[name] = cur
			}
			continue
		}
		if cur == nil || len(fields) < 2 {
			continue
		}
		v, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "Rss:":
			cur.RSSKiB += v
		case "Anonymous:":
			cur.AnonKiB += v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read smaps: %w", err)
	}
	out := make([]Mapping, 0, len(byName))
	for _, m := range byName {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b Mapping) int { return int(b.RSSKiB - a.RSSKiB) })
	return out, nil
}

// CPUTime is the CPU time pid has used: the sum of its threads' run time in
// /proc/<pid>/task/*/schedstat, in nanoseconds. A reply costs about a
// millisecond of CPU, so the clock ticks of /proc/<pid>/stat (10 ms) moved a
// 200-reply run's "CPU per reply" by ±0.05–0.1 ms; they are the fallback
// where schedstat is missing. Threads that exited are not counted (a Go
// process keeps its threads).
func CPUTime(pid int) (time.Duration, error) {
	if d, err := schedCPUTime(pid); err == nil {
		return d, nil
	}
	return tickCPUTime(pid)
}

func schedCPUTime(pid int) (time.Duration, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("read CPU time: %w", err)
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread exited meanwhile
		}
		if err != nil {
			return 0, fmt.Errorf("read CPU time: %w", err)
		}
		f := strings.Fields(string(b))
		if len(f) < 1 {
			return 0, fmt.Errorf("malformed %s/%s/schedstat", dir, t.Name())
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed %s/%s/schedstat: %w", dir, t.Name(), err)
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}

// PageFaults are the minor and major page faults pid has taken, from
// /proc/<pid>/stat.
func PageFaults(pid int) (minor, major int64, err error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, 0, err
	}
	minor, err1 := strconv.ParseInt(f[7], 10, 64)
	major, err2 := strconv.ParseInt(f[9], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	return minor, major, nil
}

// statFields are the fields of /proc/<pid>/stat after the command name
// (field 3, the state, is f[0]).
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return nil, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	return f, nil
}

// tickCPUTime is the user+system CPU time from /proc/<pid>/stat (clock
// ticks of 10 ms, the Linux USER_HZ of 100).
func tickCPUTime(pid int) (time.Duration, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}
