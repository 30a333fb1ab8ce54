package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Issue 9: with the daemon running (and holding the database), the CLI talks
// to it through the local admin endpoint: status, jobs, pairing, sessions.
func TestCLIAgainstRunningDaemon(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	addr := freePort(t)
	cfg := writeConfig(t, fmt.Sprintf(`bot:
  data_dir: ./data
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
channels:
  console:
    enabled: false
personas:
  dir: ./personas
jobs:
  - name: standup
    schedule: "0 9 * * 1-5"
    kind: reminder
    text: Stand-up in 5 minutes
    deliver_to: ["telegram:42"]
server:
  listen: %s
`, llm.URL, addr))
	env := cleanEnv("SB_E2E_KEY=" + e2eKey)
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitHang)
	defer cancel()
	daemon := exec.CommandContext(ctx, binPath, "--config", cfg, "run")
	daemon.Env = env
	var logs strings.Builder
	daemon.Stderr = &logs
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = daemon.Process.Signal(syscall.SIGTERM)
		_ = daemon.Wait()
		if strings.Contains(logs.String(), e2eKey) {
			t.Error("the API key appears in the daemon's log")
		}
	}()
	deadline := time.Now().Add(waitHang)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon not ready; log:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	r := runBin(t, env, "--config", cfg, "status")
	if r.code != 0 || !strings.Contains(r.stdout, "Switchboard status") || !strings.Contains(r.stdout, "API key set") {
		t.Fatalf("status: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	noSecret(t, r, e2eKey)

	r = runBin(t, env, "--config", cfg, "jobs", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "standup") || !strings.Contains(r.stdout, "reminder") {
		t.Fatalf("jobs list: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	r = runBin(t, env, "--config", cfg, "pairing", "approve", "NOSUCH23")
	if r.code == 0 || !strings.Contains(r.stderr, "unknown or expired pairing code") {
		t.Fatalf("pairing approve of an unknown code: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// Issue 14: store commands go through the daemon too (remote_test.go).
	r = runBin(t, env, "--config", cfg, "sessions", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "no sessions yet") {
		t.Fatalf("sessions list while running: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	r = runBin(t, env, "--config", cfg, "config", "get", "llm.api_key")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "[redacted]" {
		t.Fatalf("config get llm.api_key: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
}
