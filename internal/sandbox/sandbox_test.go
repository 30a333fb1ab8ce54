package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxHidesTheHost runs commands that try to reach what the daemon
// owns or the host keeps private; none may succeed.
func TestSandboxHidesTheHost(t *testing.T) {
	t.Setenv("SECRET_SENTINEL", "sentinel-value-4711")
	r := bwrapRunner(t, Options{})

	// The daemon's data dir, outside the workspace: a database, the admin
	// token and a control socket.
	data := t.TempDir()
	token := "admin-token-" + marker(t)
	if err := os.WriteFile(filepath.Join(data, "admin.token"), []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "switchboard.db"), []byte("bolt"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(data, "admin.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	abstract := "@" + marker(t)
	al, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	port := tl.Addr().(*net.TCPAddr).Port
	ro := marker(t) // a file name no host path has

	pyConnect := func(family, addr string) string {
		return fmt.Sprintf(`python3 -c 'import socket,sys; s=socket.socket(socket.%s); s.settimeout(3); s.connect(%s); print("CONNECTED")'`, family, addr)
	}
	tests := []struct {
		name    string
		cmd     string
		forbid  []string // must not appear in stdout or stderr
		require string   // must appear in stdout
	}{
		{name: "shadow", cmd: "cat /etc/shadow && echo READ", forbid: []string{"READ", "root:"}},
		{name: "host passwd", cmd: "cat /etc/passwd", forbid: []string{"root:x:0"}, require: "sandbox:x:65534"},
		{name: "data dir", cmd: fmt.Sprintf("ls -la %[1]s; cat %[1]s/admin.token; ls /tmp; echo DONE", data),
			forbid: []string{token, "switchboard.db"}, require: "DONE"},
		{name: "admin socket", cmd: pyConnect("AF_UNIX", fmt.Sprintf("%q", sock)), forbid: []string{"CONNECTED"}},
		{name: "abstract socket", cmd: pyConnect("AF_UNIX", fmt.Sprintf(`"\0%s"`, abstract[1:])), forbid: []string{"CONNECTED"}},
		{name: "network", cmd: pyConnect("AF_INET", fmt.Sprintf(`("127.0.0.1", %d)`, port)), forbid: []string{"CONNECTED"}},
		{name: "environment", cmd: "env; cat /proc/1/environ", forbid: []string{"SECRET_SENTINEL", "sentinel-value-4711", "OPENAI"},
			require: "HOME=/workspace"},
		{name: "user", cmd: "id -u; echo caps=$(grep CapEff /proc/self/status)", forbid: []string{"\n0\n"},
			require: "65534\ncaps=CapEff: 0000000000000000"},
		{name: "system read-only", cmd: fmt.Sprintf("touch /usr/%[1]s || touch /usr/lib/%[1]s || echo RO", ro), require: "RO"},
		{name: "host processes", cmd: "ls /proc | grep -c '^[0-9]'; ps ax", forbid: []string{"go test", "sandbox.test"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := r.Run(context.Background(), tc.cmd, nil, Limits{})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			out := "\n" + res.Stdout + "\n" + res.Stderr
			for _, f := range tc.forbid {
				if strings.Contains(out, f) {
					t.Errorf("output holds %q:\n%s", f, out)
				}
			}
			if !strings.Contains(res.Stdout, tc.require) {
				t.Errorf("stdout lacks %q:\n%s", tc.require, out)
			}
			for _, p := range []string{"/usr/" + ro, "/usr/lib/" + ro} {
				if _, err := os.Lstat(p); err == nil {
					os.Remove(p)
					t.Errorf("the command wrote %s on the host", p)
				}
			}
		})
	}
}

// TestNetworkOption: exec.network opens the host's network, and only then.
func TestNetworkOption(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello from the host\n"))
			c.Close()
		}
	}()
	cmd := fmt.Sprintf(`python3 -c 'import socket; s=socket.create_connection(("127.0.0.1", %d), timeout=5); print(s.recv(100).decode())'`,
		ln.Addr().(*net.TCPAddr).Port)
	for _, network := range []bool{false, true} {
		t.Run(fmt.Sprintf("network=%v", network), func(t *testing.T) {
			r := bwrapRunner(t, Options{Network: network})
			res, err := r.Run(context.Background(), cmd, nil, Limits{})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			got := strings.Contains(res.Stdout, "hello from the host")
			if got != network {
				t.Errorf("network %v: reached the host's listener = %v (exit %d)\nstdout: %s\nstderr: %s",
					network, got, res.ExitCode, res.Stdout, res.Stderr)
			}
		})
	}
}
