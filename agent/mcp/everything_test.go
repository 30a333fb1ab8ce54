package mcp

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
)

// EverythingBin returns the path of @modelcontextprotocol/server-everything's
// bin (SWITCHBOARD_MCP_EVERYTHING, which .ci/run sets after installing it
// with npm), or skips the test saying how to get it.
func EverythingBin(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("SWITCHBOARD_MCP_EVERYTHING")
	if bin == "" {
		t.Skip("SWITCHBOARD_MCP_EVERYTHING is not set: run `npm install --prefix DIR @modelcontextprotocol/server-everything` and set it to DIR/node_modules/.bin/mcp-server-everything (.ci/run does)")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("SWITCHBOARD_MCP_EVERYTHING=%s: %v", bin, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: server-everything needs it")
	}
	return bin
}

// StartEverythingHTTP runs server-everything over Streamable HTTP on a free
// local port and returns its endpoint; the process group is killed at
// cleanup.
func StartEverythingHTTP(t testing.TB) string {
	bin := EverythingBin(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on port") {
				close(ready)
				break
			}
		}
		for sc.Scan() { // drain
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("server-everything (streamableHttp) did not start listening")
	}
	return "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
}

// Against @modelcontextprotocol/server-everything (not written by this
// project) over stdio and over Streamable HTTP.
func TestServerEverything(t *testing.T) {
	bin := EverythingBin(t)
	t.Setenv("SWITCHBOARD_DAEMON_SECRET", "do-not-pass-me")
	for _, tc := range []struct {
		name string
		cfg  func() ServerConfig
	}{
		{"stdio", func() ServerConfig {
			return ServerConfig{Command: bin, Args: []string{"stdio"}, Env: map[string]string{"PASSED_ON": "yes-passed"}, Timeout: 20 * time.Second}
		}},
		{"http", func() ServerConfig {
			return ServerConfig{URL: StartEverythingHTTP(t), Headers: map[string]string{"Authorization": "Bearer x"}, Timeout: 20 * time.Second}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := agent.NewRegistry()
			m := newManager(t, reg)
			m.Apply(map[string]ServerConfig{"everything": tc.cfg()})
			waitReady(t, m)
			sum, ok := reg.Get("everything__get-sum")
			if !ok {
				t.Fatalf("no get-sum; tools %v", reg.Names())
			}
			if a := agent.AnnotationsOf(sum); !a.ReadOnly || a.Destructive {
				t.Fatalf("get-sum annotations %+v", a)
			}
			if got, err := call(t, reg, "everything__get-sum", `{"a":2,"b":40}`); err != nil || !strings.Contains(got, "42") {
				t.Fatalf("get-sum = %q, %v", got, err)
			}
			if _, err := call(t, reg, "everything__get-sum", `{"a":"two","b":40}`); err == nil || !strings.Contains(err.Error(), "schema") {
				t.Fatalf("a bad argument must be refused by the schema: %v", err)
			}
			if got, err := call(t, reg, "everything__echo", `{"message":"hello"}`); err != nil || !strings.Contains(got, "hello") {
				t.Fatalf("echo = %q, %v", got, err)
			}
			if got, err := call(t, reg, "everything__get-tiny-image", `{}`); err != nil || !strings.Contains(got, "[image: image/png, ") {
				t.Fatalf("get-tiny-image = %q, %v", got, err)
			}
			if got, err := call(t, reg, "everything__get-structured-content", `{"location":"New York"}`); err != nil || !strings.Contains(got, `"temperature"`) {
				t.Fatalf("get-structured-content = %q, %v", got, err)
			}
			if tc.name == "stdio" {
				got, err := call(t, reg, "everything__get-env", `{}`)
				if err != nil || !strings.Contains(got, "yes-passed") || strings.Contains(got, "do-not-pass-me") {
					t.Fatalf("get-env: the env must carry the server's env and none of the daemon's: %v\n%.2000s", err, got)
				}
			}
		})
	}
}
