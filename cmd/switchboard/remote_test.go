package main

// Issue 14 (items 2 and 5), with the built binary: every store command works
// while the daemon runs (through its admin API) and without it (on the store);
// Ctrl-C during an answer says what it waits for, a second Ctrl-C quits at
// once, and the canceled question is not answered again at the next start.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// syncBuf is a bytes.Buffer safe for a process's writer goroutine and the test.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// awaitCond polls cond until it holds or waitHang passes.
func awaitCond(t *testing.T, what string, cond func() bool, dump func() string) {
	t.Helper()
	deadline := time.Now().Add(waitHang)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s\n%s", what, dump())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// daemonProc is the binary running `run`.
type daemonProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *syncBuf
	stderr *syncBuf
	done   chan error
}

func (p *daemonProc) dump() string {
	return "stdout:\n" + p.stdout.String() + "\nstderr:\n" + p.stderr.String()
}

// startDaemonBin runs `switchboard run` and waits until /readyz answers 200.
func startDaemonBin(t *testing.T, env []string, cfg, addr string) *daemonProc {
	t.Helper()
	return startDaemonBinArgs(t, env, cfg, addr)
}

// startDaemonBinArgs is startDaemonBin with more arguments for `run`.
func startDaemonBinArgs(t *testing.T, env []string, cfg, addr string, runArgs ...string) *daemonProc {
	t.Helper()
	cmd := exec.Command(binPath, append([]string{"--config", cfg, "run"}, runArgs...)...)
	cmd.Env = env
	p := &daemonProc{cmd: cmd, stdout: &syncBuf{}, stderr: &syncBuf{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(waitHang):
			_ = cmd.Process.Kill()
		}
	})
	awaitCond(t, "the daemon to be ready", func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == 200
	}, p.dump)
	return p
}

// chatProc is a `switchboard chat` child; stdin is its input.
type chatProc struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	out, err *syncBuf
	exited   chan error // its exit, once
}

func (c *chatProc) dump() string {
	return "chat stdout:\n" + c.out.String() + "\nchat stderr:\n" + c.err.String()
}

// startChatBin starts `switchboard chat` on cfg; it is killed at the end of the test.
func startChatBin(t *testing.T, env []string, cfg string) *chatProc {
	t.Helper()
	c := &chatProc{cmd: exec.Command(binPath, "--config", cfg, "chat"), out: &syncBuf{}, err: &syncBuf{}, exited: make(chan error, 1)}
	c.cmd.Env = env
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.err
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.exited <- c.cmd.Wait() }()
	t.Cleanup(func() { _ = c.cmd.Process.Kill() })
	return c
}

// kill SIGKILLs the daemon (a crash) and waits until it is gone.
func (p *daemonProc) kill() {
	_ = p.cmd.Process.Kill()
	err := <-p.done
	p.done <- err // for the cleanup's wait
}

// stop sends SIGTERM and waits for a clean exit.
func (p *daemonProc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("daemon exit: %v\n%s", err, p.dump())
		}
		p.done <- nil
	case <-time.After(waitHang):
		t.Fatalf("daemon did not stop\n%s", p.dump())
	}
}

// runBinIn is runBin with stdin.
func runBinIn(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitHang)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return r
}

func remoteConfig(t *testing.T, llmURL, addr string, console bool) string {
	return writeConfig(t, fmt.Sprintf(`bot:
  data_dir: ./data
  timezone: UTC
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
channels:
  console:
    enabled: %t
personas:
  dir: ./personas
server:
  listen: %s
`, llmURL, console, addr))
}

// Issue 14 item 2: chat, ask, sessions, prompt and audit work with the daemon
// running (through its admin API) and stopped (on the store directly); ask's
// mistakes are refused before the model is called.
func TestCLIStoreCommandsWithDaemonRunningAndStopped(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	addr := freePort(t)
	cfg := remoteConfig(t, llm.URL, addr, false)
	env := cleanEnv("SB_E2E_KEY=" + e2eKey)
	d := startDaemonBin(t, env, cfg, addr)

	for _, mode := range []string{"running", "stopped"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "stopped" {
				d.stop(t)
			}
			check := func(r result, what string, ok bool) {
				t.Helper()
				noSecret(t, r, e2eKey)
				if !ok {
					t.Fatalf("%s (daemon %s): exit %d\nstdout: %s\nstderr: %s", what, mode, r.code, r.stdout, r.stderr)
				}
			}
			q := "question while " + mode
			r := runBin(t, env, "--config", cfg, "ask", q)
			check(r, "ask", r.code == 0 && strings.TrimSpace(r.stdout) == "echo: "+q)

			line := "chat line while " + mode
			r = runBinIn(t, env, line+"\n", "--config", cfg, "chat")
			check(r, "chat", r.code == 0 && strings.Contains(r.stdout, "echo: "+line) && strings.Count(r.stdout, "Chatting with") == 1)

			r = runBin(t, env, "--config", cfg, "sessions", "list")
			check(r, "sessions list", r.code == 0 && strings.Contains(r.stdout, "cli:ask") && strings.Contains(r.stdout, "console:local"))

			r = runBin(t, env, "--config", cfg, "sessions", "show", "console:local")
			check(r, "sessions show", r.code == 0 && strings.Contains(r.stdout, "user: "+line) && strings.Contains(r.stdout, "echo: "+line))

			r = runBin(t, env, "--config", cfg, "sessions", "show", "nosuch:1")
			check(r, "sessions show of an unknown session", r.code == 2 && strings.Contains(r.stderr, `no session "nosuch:1"`))

			r = runBin(t, env, "--config", cfg, "prompt", "--target", "telegram:42")
			check(r, "prompt", r.code == 0 && strings.Contains(r.stdout, "===== system message 1 =====") &&
				strings.Contains(r.stdout, "# persona: "))

			r = runBin(t, env, "--config", cfg, "prompt", "--target", "nonsense")
			check(r, "prompt with a bad target", r.code == 2 && strings.Contains(r.stderr, "not a chat address"))

			r = runBin(t, env, "--config", cfg, "audit")
			check(r, "audit", r.code == 0 && strings.Contains(r.stdout, "ACTION"))

			// ask's mistakes: plain sentences, exit 2, nothing sent to the model.
			before := llm.RequestCount()
			for _, tt := range []struct {
				name string
				args []string
				want string
			}{
				{"empty question", []string{"ask", ""}, "nothing to ask"},
				{"unknown persona", []string{"ask", "--persona", "ghost", "hi"}, `no persona "ghost" (have: `},
				{"empty session", []string{"ask", "--session", "", "hi"}, "--session is empty"},
			} {
				r = runBin(t, env, append([]string{"--config", cfg}, tt.args...)...)
				check(r, tt.name, r.code == 2 && strings.Contains(r.stderr, tt.want) && r.stdout == "")
			}
			if n := llm.RequestCount(); n != before {
				t.Fatalf("refused asks reached the model: %d requests", n-before)
			}

			// --new starts a fresh conversation: the model sees no earlier turn.
			r = runBin(t, env, "--config", cfg, "ask", "--new", "fresh start")
			check(r, "ask --new", r.code == 0 && strings.TrimSpace(r.stdout) == "echo: fresh start")
			if got := llm.LastRequest().Body.Messages; strings.Contains(fmt.Sprint(got), q) {
				t.Fatalf("ask --new still sent the earlier conversation: %v", got)
			}
		})
	}

	r := runBin(t, env, "--config", cfg, "ask", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "cli:ask") || !strings.Contains(r.stdout, "--new") {
		t.Fatalf("ask --help does not explain the kept session and --new:\n%s", r.stdout)
	}
}

// Issue 14 item 5: Ctrl-C during an answer says what it waits for and how
// long; a second Ctrl-C quits at once (well before the 10s grace); the
// canceled question is not answered again at the next start.
func TestCtrlCDuringAnswer(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Match(
		fakellm.Rule{When: fakellm.LastUserIs("slow question"), Respond: fakellm.Reply(fakellm.Response{Content: "slow answer", Delay: time.Minute})},
		fakellm.Rule{Respond: func(r *fakellm.Request) fakellm.Response {
			return fakellm.Response{Content: "echo: " + r.LastUserText()}
		}},
	))
	addr := freePort(t)
	cfg := remoteConfig(t, llm.URL, addr, true)
	env := cleanEnv("SB_E2E_KEY=" + e2eKey)
	d := startDaemonBin(t, env, cfg, addr)
	if _, err := io.WriteString(d.stdin, "slow question\n"); err != nil {
		t.Fatal(err)
	}
	awaitCond(t, "the model to get the question", func() bool { return llm.RequestCount() >= 1 }, d.dump)

	_ = d.cmd.Process.Signal(syscall.SIGINT)
	awaitCond(t, "the first Ctrl-C's notice", func() bool {
		return strings.Contains(d.stderr.String(), "waiting up to 10s for 1 running answer(s) to finish; press Ctrl-C again")
	}, d.dump)
	_ = d.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatalf("exit after the second Ctrl-C: %v\n%s", err, d.dump())
		}
		d.done <- nil
	case <-time.After(9 * time.Second): // before the 10s grace period ends: the most a loaded machine gets
		t.Fatalf("the second Ctrl-C did not quit at once\n%s", d.dump())
	}
	if !strings.Contains(d.stderr.String(), "quitting now") {
		t.Fatalf("the second Ctrl-C said nothing\n%s", d.dump())
	}

	// Next start: the canceled question is not asked again. A new question
	// on the same console chat runs after any replay, so once it is
	// answered a replay would have happened.
	llm.SetResponder(fakellm.Echo()) // a replay would now be answered at once
	d2 := startDaemonBin(t, env, cfg, addr)
	if _, err := io.WriteString(d2.stdin, "after restart\n"); err != nil {
		t.Fatal(err)
	}
	awaitCond(t, "the answer after the restart", func() bool { return strings.Contains(d2.stdout.String(), "echo: after restart") }, d2.dump)
	slow := 0
	for _, req := range llm.Requests() {
		if req.LastUserText() == "slow question" {
			slow++
		}
	}
	if slow != 1 || strings.Contains(d2.stdout.String(), "slow question") {
		t.Fatalf("the canceled question was asked %d times\n%s", slow, d2.dump())
	}
}

// Issue 14 item 4, the non-terminal case: with stdout and stderr in one
// stream (2>&1), a streamed answer line is never torn by a log line.
func TestConsoleAnswerNotTornByLogs(t *testing.T) {
	answer := "a streamed answer in many small pieces that takes a while"
	llm := fakellm.Start(t, func(*fakellm.Request) fakellm.Response {
		return fakellm.Response{Content: answer, ChunkSize: 3, ChunkDelay: 5 * time.Millisecond}
	})
	addr := freePort(t)
	cfg := writeConfig(t, fmt.Sprintf(`bot:
  data_dir: ./data
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
channels:
  console:
    enabled: true
personas:
  dir: ./personas
server:
  listen: %s
log:
  level: debug
`, llm.URL, addr))
	env := cleanEnv("SB_E2E_KEY=" + e2eKey)
	cmd := exec.Command(binPath, "--config", cfg, "run")
	cmd.Env = env
	both := &syncBuf{}
	cmd.Stdout, cmd.Stderr = both, both // one stream, like 2>&1
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	awaitCond(t, "the daemon to be ready", func() bool { return strings.Contains(both.String(), "switchboard is running") }, both.String)
	// One line at a time: two lines queued before the turn starts would be
	// answered together, as one turn.
	for i, line := range []string{"first\n", "second\n"} {
		if _, err := io.WriteString(stdin, line); err != nil {
			t.Fatal(err)
		}
		awaitCond(t, "an answer", func() bool { return strings.Count(both.String(), answer) == i+1 }, both.String)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	sc := bufio.NewScanner(strings.NewReader(both.String()))
	whole := 0
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "> ")
		if strings.Contains(line, answer) && line != answer {
			t.Fatalf("an answer line is torn: %q\n%s", line, both.String())
		}
		if line == answer {
			whole++
		}
	}
	if whole != 2 {
		t.Fatalf("want 2 whole answer lines, got %d\n%s", whole, both.String())
	}
}

// Issue 14 item 5 through the daemon: Ctrl-C in `switchboard chat` during an
// answer quits at once and stops the answer in the daemon; it is not asked
// again at the daemon's next start.
func TestChatCtrlCThroughDaemon(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Match(
		fakellm.Rule{When: fakellm.LastUserIs("slow chat"), Respond: fakellm.Reply(fakellm.Response{Content: "slow answer", Delay: time.Minute})},
		fakellm.Rule{Respond: func(r *fakellm.Request) fakellm.Response {
			return fakellm.Response{Content: "echo: " + r.LastUserText()}
		}},
	))
	addr := freePort(t)
	cfg := remoteConfig(t, llm.URL, addr, false)
	env := cleanEnv("SB_E2E_KEY=" + e2eKey)
	d := startDaemonBin(t, env, cfg, addr)

	c := startChatBin(t, env, cfg)
	chat, out, stdin, exited := c.cmd, c.out, c.stdin, c.exited
	dump := func() string { return c.dump() + "\n" + d.dump() }
	awaitCond(t, "the chat banner", func() bool { return strings.Contains(out.String(), "through the running daemon") }, dump)
	if _, err := io.WriteString(stdin, "slow chat\n"); err != nil {
		t.Fatal(err)
	}
	awaitCond(t, "the model to get the question", func() bool { return llm.RequestCount() >= 1 }, dump)
	_ = chat.Process.Signal(syscall.SIGINT)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("chat exit after Ctrl-C: %v\n%s", err, dump())
		}
	case <-time.After(waitHang):
		t.Fatalf("chat did not quit on Ctrl-C\n%s", dump())
	}
	if !strings.Contains(out.String(), "(canceled)") {
		t.Fatalf("chat did not say the answer was canceled\n%s", dump())
	}

	d.stop(t)
	llm.SetResponder(fakellm.Echo()) // a replay would now be answered at once
	startDaemonBin(t, env, cfg, addr)
	r := runBinIn(t, env, "after restart\n", "--config", cfg, "chat")
	if r.code != 0 || !strings.Contains(r.stdout, "echo: after restart") {
		t.Fatalf("chat after restart: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	slow := 0
	for _, req := range llm.Requests() {
		if req.LastUserText() == "slow chat" {
			slow++
		}
	}
	if slow != 1 {
		t.Fatalf("the canceled chat question was asked %d times\n%s", slow, dump())
	}
}
