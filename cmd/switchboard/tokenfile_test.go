package main

// Issue B3, on the built binary: a named pipe at <data_dir>/admin.token or
// admin.token.next hangs neither the daemon nor the CLI. The daemon starts,
// says which file it refused and what to do, and ends on SIGTERM; `status`,
// `console` and `token rotate` answer; `token rotate` with the daemon
// stopped replaces the pipe with a token file, and the next start uses it.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

func TestBinaryAdminTokenNamedPipe(t *testing.T) {
	for _, file := range []string{"admin.token", "admin.token.next"} {
		t.Run(file, func(t *testing.T) {
			llm := fakellm.Start(t, fakellm.Echo())
			addr := freePort(t)
			cfg := consConfig(t, llm.URL, addr, "")
			env := cleanEnv("SB_E2E_KEY=" + e2eKey)
			data := filepath.Join(filepath.Dir(cfg), "data")
			if err := os.MkdirAll(data, 0o700); err != nil {
				t.Fatal(err)
			}
			pipe := filepath.Join(data, file)
			if err := syscall.Mkfifo(pipe, 0o600); err != nil {
				t.Fatal(err)
			}
			run := func(args ...string) result {
				t.Helper()
				return runBinDir(t, filepath.Dir(cfg), env, append([]string{"--config", cfg}, args...)...)
			}

			// Stopped: status says so (it reads admin.token to ask).
			if r := run("status"); r.code != exitFailure || !strings.Contains(r.stderr, "not running") {
				t.Errorf("status, daemon stopped: exit %d, want 1 saying it is not running\n%s", r.code, r.stderr)
			}

			ctx, cancel := context.WithTimeout(context.Background(), waitHang)
			defer cancel()
			d := startConsDaemon(ctx, t, cfg, env)
			line := d.log.wait(ctx, t, "not a regular file")
			for _, w := range []string{pipe, "a named pipe", "remove it"} {
				if !strings.Contains(line, w) {
					t.Errorf("the daemon's warning does not say %q: %s", w, line)
				}
			}
			if r := run("status"); r.code != 0 {
				t.Errorf("status, daemon running: exit %d\n%s", r.code, r.stderr)
			}
			r := run("console")
			if r.code != exitFailure {
				t.Errorf("console without a usable admin token: exit %d, want 1\n%s", r.code, r.stderr)
			}
			if file == "admin.token" && (!strings.Contains(r.stderr, pipe) || !strings.Contains(r.stderr, "remove it")) {
				t.Errorf("console does not say that %s is refused and what to do:\n%s", pipe, r.stderr)
			}
			if r := run("token", "rotate"); r.code != 0 {
				t.Errorf("token rotate, daemon running: exit %d\n%s", r.code, r.stderr)
			}
			d.stop() // SIGTERM ends it (the hang detector is ctx)

			if r := run("token", "rotate"); r.code != 0 {
				t.Fatalf("token rotate, daemon stopped: exit %d\n%s", r.code, r.stderr)
			}
			for _, f := range []string{"admin.token", "admin.token.next"} {
				if fi, err := os.Lstat(filepath.Join(data, f)); err == nil && !fi.Mode().IsRegular() {
					t.Fatalf("%s is still %v after token rotate", f, fi.Mode().Type())
				}
			}
			d = startConsDaemon(ctx, t, cfg, env)
			mintLink(t, env, cfg)
			d.stop()
			if strings.Contains(d.log.String(), "not a regular file") {
				t.Errorf("the daemon still refuses a token file after token rotate:\n%s", d.log.String())
			}
		})
	}
}
