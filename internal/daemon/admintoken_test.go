package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// Issue 28: the local admin token is kept across starts, a rotation staged
// while the daemon ran is adopted at the next start, and a file that holds
// no token (or is readable by others) is repaired, never used as it is.
func TestLocalTokenKeptRotatedRepaired(t *testing.T) {
	const kept = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cases := []struct {
		name     string
		cur      string // admin.token ("" = none)
		mode     os.FileMode
		next     string // admin.token.next ("" = none)
		how      string
		wantKept bool
	}{
		{"first start", "", 0, "", daemon.TokenNew, false},
		{"restart", kept + "\n", 0o600, "", daemon.TokenKept, true},
		{"restart with a loose mode", kept + "\n", 0o644, "", daemon.TokenKept, true},
		{"a file that is no token", "hunter2\n", 0o600, "", daemon.TokenNew, false},
		{"a staged rotation", kept + "\n", 0o600, "rotate", daemon.TokenRotated, false},
		{"a broken staged rotation", kept + "\n", 0o600, "garbage\n", daemon.TokenKept, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cur, next := filepath.Join(dir, daemon.AdminTokenFile), filepath.Join(dir, daemon.AdminTokenNextFile)
			if c.cur != "" {
				if err := os.WriteFile(cur, []byte(c.cur), c.mode); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(cur, c.mode); err != nil {
					t.Fatal(err)
				}
			}
			var staged string
			switch c.next {
			case "":
			case "rotate":
				if _, err := daemon.RotateLocalToken(dir, true); err != nil {
					t.Fatal(err)
				}
				data, err := os.ReadFile(next)
				if err != nil {
					t.Fatal(err)
				}
				staged = strings.TrimSpace(string(data))
				if got, _ := os.ReadFile(cur); string(got) != c.cur {
					t.Fatal("a rotation while the daemon runs changed admin.token")
				}
			default:
				if err := os.WriteFile(next, []byte(c.next), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			tok, how, err := daemon.LoadLocalToken(dir)
			if err != nil {
				t.Fatal(err)
			}
			if how != c.how || (tok == kept) != c.wantKept || len(tok) != 64 {
				t.Fatalf("got a %d-char token %s (kept: %v), want %s (kept: %v)", len(tok), how, tok == kept, c.how, c.wantKept)
			}
			if staged != "" && tok != staged {
				t.Fatal("the adopted token is not the staged one")
			}
			data, err := os.ReadFile(cur)
			if err != nil || strings.TrimSpace(string(data)) != tok {
				t.Fatalf("admin.token does not hold the token in use: %v", err)
			}
			if fi, _ := os.Stat(cur); fi.Mode().Perm() != 0o600 {
				t.Errorf("admin.token has mode %v, want 0600", fi.Mode().Perm())
			}
			if _, err := os.Stat(next); !os.IsNotExist(err) {
				t.Error("admin.token.next is still there after the start")
			}
			again, how2, err := daemon.LoadLocalToken(dir)
			if err != nil || again != tok || how2 != daemon.TokenKept {
				t.Errorf("the next start: %s %v, want the same token kept", how2, err)
			}
		})
	}
}

// With the daemon stopped a rotation writes admin.token at once and drops a
// staged one.
func TestRotateLocalTokenStopped(t *testing.T) {
	dir := t.TempDir()
	first, _, err := daemon.LoadLocalToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := daemon.RotateLocalToken(dir, true); err != nil {
		t.Fatal(err)
	}
	path, err := daemon.RotateLocalToken(dir, false)
	if err != nil || path != filepath.Join(dir, daemon.AdminTokenFile) {
		t.Fatalf("rotate: %s %v", path, err)
	}
	data, _ := os.ReadFile(path)
	second := strings.TrimSpace(string(data))
	if second == first || len(second) != 64 {
		t.Fatal("rotate with the daemon stopped did not write a new token")
	}
	if tok, how, _ := daemon.LoadLocalToken(dir); tok != second || how != daemon.TokenKept {
		t.Errorf("the next start used %s, not the rotated token", how)
	}
}

// Issue B3: a named pipe (or any file but a regular one) at admin.token or
// admin.token.next is refused at once, with the file named and what to do,
// by the daemon's start (LoadLocalToken) and the CLI's read
// (ReadLocalToken): never a hang. /dev/zero through a symlink is refused
// the same way.
func TestLocalTokenNotARegularFile(t *testing.T) {
	cases := []struct {
		name, file string
		make       func(path string) error
		kind       string
	}{
		{"admin.token a named pipe", daemon.AdminTokenFile, func(p string) error { return syscall.Mkfifo(p, 0o600) }, "a named pipe"},
		{"admin.token.next a named pipe", daemon.AdminTokenNextFile, func(p string) error { return syscall.Mkfifo(p, 0o600) }, "a named pipe"},
		{"admin.token a link to /dev/zero", daemon.AdminTokenFile, func(p string) error { return os.Symlink("/dev/zero", p) }, "a character device"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, c.file)
			if err := c.make(path); err != nil {
				t.Fatal(err)
			}
			type answer struct {
				tok string
				err error
			}
			calls := map[string]func() answer{
				"LoadLocalToken": func() answer { tok, _, err := daemon.LoadLocalToken(dir); return answer{tok, err} },
			}
			if c.file == daemon.AdminTokenFile {
				calls["ReadLocalToken"] = func() answer { tok, err := daemon.ReadLocalToken(dir); return answer{tok, err} }
			}
			for name, call := range calls {
				got := make(chan answer, 1)
				go func() { got <- call() }()
				select {
				case a := <-got:
					if a.err == nil || a.tok != "" {
						t.Fatalf("%s: token %q, err %v; want it refused", name, a.tok, a.err)
					}
					for _, w := range []string{path, "not a regular file (" + c.kind + ")", "remove it"} {
						if !strings.Contains(a.err.Error(), w) {
							t.Errorf("%s: %q does not say %q", name, a.err, w)
						}
					}
				case <-time.After(time.Minute): // a hang detector
					t.Fatalf("%s hangs on %s", name, c.name)
				}
			}
			if fi, err := os.Lstat(path); err != nil || fi.Mode().IsRegular() {
				t.Errorf("the refused %s was replaced or removed (%v)", c.file, err)
			}
		})
	}
}

// A configured server.admin_token shorter than MinAdminTokenLen is warned
// about at start (wrong tokens are limited, but the right one is never
// refused, so a short token's strength is all that stops guessing); a long
// one is not. The token itself never reaches the log.
func TestShortAdminTokenIsWarnedAbout(t *testing.T) {
	for _, c := range []struct {
		token string
		warn  bool
	}{
		{"short-tok-1", true},
		{strings.Repeat("k", daemon.MinAdminTokenLen), false},
	} {
		llm := fakellm.Start(t, fakellm.Echo())
		cfg := baseConfig(t, llm)
		cfg.Server.AdminToken = config.NewSecret(c.token)
		lb := &logBuf{}
		d := startDaemonWithLog(t, cfg, lb, time.Second, c.token)
		d.stop()
		out := lb.String()
		if got := strings.Contains(out, "server.admin_token is short"); got != c.warn {
			t.Errorf("token of %d characters: warned %v, want %v:\n%s", len(c.token), got, c.warn, out)
		}
		if strings.Contains(out, c.token) {
			t.Errorf("the admin token reached the log:\n%s", out)
		}
	}
}
