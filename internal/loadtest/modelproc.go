package loadtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// ModelProcessEnv, set in a test binary's environment, makes TestMain serve
// EchoModel instead of running tests (RunModelProcess).
const ModelProcessEnv = "SWITCHBOARD_LOADTEST_ECHO_MODEL"

// ModelProcess is EchoModel's answers in a child process (the test binary
// re-executed with ModelProcessEnv set), served by rawEchoServer. With the model in another process, as a real
// model endpoint is, an in-process benchmark's allocations and heap are the
// daemon's alone (in-process, net/http's server and the fake's answers were
// ~60 of the allocations counted per turn). The child exits when its stdin
// closes, so it never outlives the benchmark; Close reaps it.
type ModelProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	URL   string // base URL up to /v1, as llm.base_url takes it
	// CPU is the child's user and system CPU time, set by Close.
	CPU time.Duration
}

// StartModelProcess starts the child and waits for its URL.
func StartModelProcess(ctx context.Context) (*ModelProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("model process: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), ModelProcessEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("model process: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("model process: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("model process: %w", err)
	}
	mp := &ModelProcess{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://") {
		mp.Close()
		return nil, fmt.Errorf("model process: no URL (read %q: %v)", line, err)
	}
	mp.URL = strings.TrimSpace(line)
	return mp, nil
}

// RequestCount asks the child how many completions it answered (-1 when it
// cannot be asked).
func (mp *ModelProcess) RequestCount() int {
	resp, err := http.Get(strings.TrimSuffix(mp.URL, "/v1") + echoCountPath)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return n
}

// Close ends the child (closing its stdin, then killing it if it has not
// exited after modelExitGrace) and reaps it; idempotent.
func (mp *ModelProcess) Close() {
	if mp.stdin == nil {
		return
	}
	mp.stdin.Close()
	mp.stdin = nil
	done := make(chan struct{})
	go func() {
		_ = mp.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(modelExitGrace):
		_ = mp.cmd.Process.Kill()
		<-done
	}
	if st := mp.cmd.ProcessState; st != nil {
		mp.CPU = st.UserTime() + st.SystemTime()
	}
}

// modelExitGrace is how long Close waits for the child to exit by itself
// (generous: a -race child on loaded cores is slow to wake).
const modelExitGrace = 10 * time.Second

// RunModelProcess is the child's side: it serves EchoModel, writes its URL
// on stdout and returns when stdin closes. It runs on one P: a real model
// endpoint does not share the daemon's CPUs, so its stand-in should take as
// little of them as it can. Its connection goroutines only read, answer and
// write; on 2 CPUs a second P only added wake-ups (idle Ps spinning for
// work) and cost ~8 µs more of the child's CPU an answer (BENCHMARKS.md).
func RunModelProcess() {
	runtime.GOMAXPROCS(1)
	m, err := startRawEcho()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer m.Close()
	fmt.Println(m.URL())
	_, _ = io.Copy(io.Discard, os.Stdin)
}
