package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

func mcpEverything(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SWITCHBOARD_MCP_EVERYTHING")
	if bin == "" {
		t.Skip("SWITCHBOARD_MCP_EVERYTHING is not set (npm install --prefix DIR @modelcontextprotocol/server-everything; .ci/run does)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	return bin
}

var pidRE = regexp.MustCompile(`everything: ready \(pid (\d+)\)`)

// Issue 16: `switchboard mcp list` connects to the servers itself when no
// daemon runs, and asks the running daemon otherwise; the daemon's MCP
// child (server-everything over stdio) does not survive the daemon.
func TestBinaryMCPList(t *testing.T) {
	bin := mcpEverything(t)
	llm := fakellm.Start(t, fakellm.Echo())
	addr := freePort(t)
	const secret = "mcp-env-secret-5678"
	cfg := writeConfig(t, fmt.Sprintf(`bot:
  data_dir: ./data
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
agent:
  tools: [current_time, "everything__get-*"]
channels:
  console:
    enabled: false
personas:
  dir: ./personas
server:
  listen: %s
mcp:
  servers:
    everything:
      command: %s
      args: [stdio]
      env:
        SOME_TOKEN: ${SB_MCP_SECRET}
    off:
      url: http://127.0.0.1:1/mcp
      enabled: false
`, llm.URL, addr, bin))
	env := cleanEnv("SB_E2E_KEY="+e2eKey, "SB_MCP_SECRET="+secret)

	r := runBin(t, env, "--config", cfg, "mcp", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "connected to each server") || !pidRE.MatchString(r.stdout) ||
		!strings.Contains(r.stdout, "  everything__get-sum\n") || !strings.Contains(r.stdout, "everything__echo  (not offered") ||
		!strings.Contains(r.stdout, "off: disabled") {
		t.Fatalf("mcp list without a daemon: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	noSecret(t, r, secret)

	daemon, logs := startBinDaemon(t, cfg, addr, env)
	stopped := false
	defer func() {
		if !stopped {
			_ = daemon.Process.Kill()
			_ = daemon.Wait()
		}
	}()
	r = runBin(t, env, "--config", cfg, "mcp", "list")
	m := pidRE.FindStringSubmatch(r.stdout)
	if r.code != 0 || !strings.Contains(r.stdout, "from the running daemon") || m == nil {
		t.Fatalf("mcp list with the daemon: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	pid, _ := strconv.Atoi(m[1])
	if syscall.Kill(pid, 0) != nil {
		t.Fatalf("the daemon's MCP server (pid %d) is not running", pid)
	}
	_ = daemon.Process.Signal(syscall.SIGTERM)
	_ = daemon.Wait()
	stopped = true
	if err := syscall.Kill(pid, 0); err == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the MCP server (pid %d) survived the daemon", pid)
	}
	if strings.Contains(logs.String(), secret) || strings.Contains(logs.String(), e2eKey) {
		t.Fatal("a secret is in the daemon's log")
	}
}

// startBinDaemon runs `switchboard run` and waits for /readyz.
func startBinDaemon(t *testing.T, cfg, addr string, env []string) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	daemon := exec.Command(binPath, "--config", cfg, "run")
	daemon.Env = env
	logs := &strings.Builder{}
	daemon.Stderr = logs
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitHang)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return daemon, logs
			}
		}
		if time.Now().After(deadline) {
			_ = daemon.Process.Kill()
			_ = daemon.Wait()
			t.Fatalf("daemon not ready; log:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
