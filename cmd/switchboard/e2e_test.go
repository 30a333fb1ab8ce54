package main

// End-to-end tests of the built binary (issue 3): TestMain builds
// `switchboard` once into a temp dir; each test runs it as an operator would,
// with a config file pointing the model at fakellm.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// binPath is the switchboard binary built by TestMain.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "switchboard-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "switchboard")
	build := exec.Command("go", "build", "-o", binPath, ".")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "go build:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const e2eKey = "sk-cli-e2e-secret-0987654321"

// cleanEnv is the test's environment without anything that configures the
// model or the platforms, plus extra.
func cleanEnv(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OPENAI_") || strings.HasSuffix(k, "_TOKEN") || strings.HasPrefix(k, "SLACK_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}

type result struct {
	code           int
	stdout, stderr string
}

// waitHang bounds every wait for something a test caused (a command's
// exit, the daemon ready or stopped, a log line): a hang detector, not a
// performance bound. Each takes well under a second on a quiet machine and
// a few on a loaded one.
const waitHang = time.Minute

// runBin runs the binary with args and env and returns its exit code and output.
func runBin(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitHang)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("run %v: %v", args, err)
	}
	return r
}

// writeConfig writes a config.yaml into a fresh dir and returns its path.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func noSecret(t *testing.T, r result, secret string) {
	t.Helper()
	if strings.Contains(r.stdout, secret) || strings.Contains(r.stderr, secret) {
		t.Fatalf("the API key appears in the output:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
	}
}

// Issue 3: `switchboard ask` answers through the configured model (key from
// an env reference) and `sessions show cli:ask` shows the stored turn.
func TestBinaryAskThenSessionsShow(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	cfg := writeConfig(t, fmt.Sprintf(`bot:
  data_dir: ./data
  timezone: UTC
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
personas:
  dir: ./personas
server:
  listen: 127.0.0.1:0
log:
  level: debug
`, llm.URL))
	env := cleanEnv("SB_E2E_KEY=" + e2eKey)

	r := runBin(t, env, "--config", cfg, "ask", "-v", "hello")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "echo: hello" {
		t.Fatalf("ask: exit %d\nstdout: %q\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	noSecret(t, r, e2eKey)
	if req := llm.LastRequest(); req == nil || req.Header.Get("Authorization") != "Bearer "+e2eKey {
		t.Fatal("the model request did not carry the key from ${SB_E2E_KEY}")
	}

	r = runBin(t, env, "--config", cfg, "sessions", "show", "cli:ask")
	if r.code != 0 || !strings.Contains(r.stdout, "hello") || !strings.Contains(r.stdout, "echo: hello") {
		t.Fatalf("sessions show: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	noSecret(t, r, e2eKey)
}

// Issue 3: `config validate` on a bad file exits 2 and names the file's line.
func TestBinaryConfigValidateNamesLine(t *testing.T) {
	for _, tt := range []struct {
		name, body, want string
	}{
		{"unknown key", "bot:\n  name: Bot\n  nmae: typo\n", ":3"},
		{"wrong type", "bot:\n  name: Bot\nagent:\n  max_iterations: lots\n", ":4"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runBin(t, cleanEnv(), "--config", writeConfig(t, tt.body), "config", "validate")
			if r.code != 2 {
				t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, "config.yaml"+tt.want) {
				t.Fatalf("stderr %q does not name config.yaml%s", r.stderr, tt.want)
			}
		})
	}
	r := runBin(t, cleanEnv(), "--config", writeConfig(t, "bot:\n  name: Fine\n"), "config", "validate")
	if r.code != 0 || !strings.Contains(r.stdout, "is valid") {
		t.Fatalf("valid file: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
}

// Issue 3: the default configuration with no model key: `run` starts, and a
// question on the console is answered with the setup guidance.
func TestBinaryRunWithoutKeyGivesGuidance(t *testing.T) {
	def, err := os.ReadFile("../../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, def, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitHang)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, "--config", cfg, "run", "--listen", "127.0.0.1:0")
	cmd.Env = cleanEnv()
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	if _, err := io.WriteString(stdin, "hello, are you there?\n"); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		var seen strings.Builder
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			seen.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "OPENAI_API_KEY") {
				found <- seen.String()
				return
			}
		}
		found <- ""
	}()
	select {
	case out := <-found:
		if out == "" {
			t.Fatalf("stdout ended without the guidance\nstderr: %s", stderr.String())
		}
	case <-ctx.Done():
		t.Fatalf("no guidance on stdout within the deadline\nstderr: %s", stderr.String())
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run did not exit cleanly on SIGTERM: %v\nstderr: %s", err, stderr.String())
	}
}
