package daemon_test

// Attacks from outside (helper A5): what CLI commands read of <data_dir>/daemon.listen when something
// else than the daemon's own record is there (B8). The attack held: each
// comes back "" (the command goes by server.listen) or the address, at
// once — a named pipe never blocks the read.

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/daemon"
)

func TestReadListenFileRefusesWhatIsNotARecord(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(outside, []byte("127.0.0.1:9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		make func(path string) error
		want string
	}{
		{"missing", func(string) error { return nil }, ""},
		{"empty", func(p string) error { return os.WriteFile(p, nil, 0o600) }, ""},
		{"garbage", func(p string) error { return os.WriteFile(p, []byte("\x00\xffnot an address"), 0o600) }, ""},
		{"no port", func(p string) error { return os.WriteFile(p, []byte("127.0.0.1\n"), 0o600) }, ""},
		{"huge", func(p string) error {
			return os.WriteFile(p, []byte("127.0.0.1:8787"+strings.Repeat(" ", 1<<20)), 0o600)
		}, ""},
		{"named pipe", func(p string) error { return syscall.Mkfifo(p, 0o600) }, ""},
		{"directory", func(p string) error { return os.Mkdir(p, 0o700) }, ""},
		{"symlink out of the data dir", func(p string) error { return os.Symlink(outside, p) }, ""},
		{"ipv6 loopback", func(p string) error { return os.WriteFile(p, []byte("[::1]:8787\n"), 0o600) }, "[::1]:8787"},
		{"wildcard", func(p string) error { return os.WriteFile(p, []byte("[::]:8787\n"), 0o600) }, "[::]:8787"},
		{"crlf", func(p string) error { return os.WriteFile(p, []byte("127.0.0.1:8787\r\n"), 0o600) }, "127.0.0.1:8787"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := c.make(filepath.Join(dir, daemon.ListenFile)); err != nil {
				t.Fatal(err)
			}
			if got := daemon.ReadListenFile(dir); got != c.want {
				t.Errorf("ReadListenFile = %q, want %q", got, c.want)
			}
		})
	}
}
