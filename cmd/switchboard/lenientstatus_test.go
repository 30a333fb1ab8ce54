package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// The operator's repro: the repository's config.yaml with server.listen
// set, the daemon started, then a tab put before `model:` on line 25 (a
// YAML syntax error far above server:, near line 153). status and sessions
// list still reach the running daemon and print one warning line.
func TestBinaryStatusWithSyntaxErrorAboveServer(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	addr := freePort(t)
	repo, err := os.ReadFile("../../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(repo), "  listen: 127.0.0.1:8787 ", "  listen: "+addr+" ", 1)
	if text == string(repo) {
		t.Fatal("config.yaml has no server.listen line to set")
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	env := hermeticEnv(t, "OPENAI_API_KEY="+e2eKey, "OPENAI_BASE_URL="+llm.URL)
	p := startDaemonBin(t, env, cfg, addr)

	lines := strings.Split(text, "\n")
	if !strings.HasPrefix(lines[24], "  model:") {
		t.Fatalf("config.yaml line 25 is %q, not llm.model", lines[24])
	}
	lines[24] = "\t" + lines[24]
	if err := os.WriteFile(cfg, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status"}, {"sessions", "list"}} {
		r := runBin(t, env, append([]string{"--config", cfg}, args...)...)
		if r.code != 0 {
			t.Fatalf("%v with a tab on line 25 and the daemon running: exit %d\nstdout: %s\nstderr: %s\n%s", args, r.code, r.stdout, r.stderr, p.dump())
		}
		warn := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if len(warn) != 1 || !strings.Contains(warn[0], "warning:") || !strings.Contains(warn[0], "config.yaml:25:") {
			t.Fatalf("%v: want one warning line naming config.yaml:25, got stderr:\n%s", args, r.stderr)
		}
		noSecret(t, r, e2eKey)
	}
	r := runBin(t, env, "--config", cfg, "status")
	expect(t, r, 0, r.stdout, "Switchboard status")
}
