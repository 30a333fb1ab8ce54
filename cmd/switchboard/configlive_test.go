package main

// Issue 28, item 1, with the built binary: with the daemon running, `config
// set`/`unset` ask it to check the edited file as its reload would (its
// environment, its personas) before anything is written, then wait for the
// reload and say what took effect; read-only commands keep working while the
// file on disk is invalid.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// liveConfig is a config for a running daemon whose Telegram token comes
// from an environment variable the daemon does not have.
func liveConfig(t *testing.T, llmURL, addr string) string {
	return writeConfig(t, fmt.Sprintf(`bot:
  name: Switchboard
  data_dir: ./data
  timezone: UTC
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
  model: gpt-4o-mini
channels:
  console:
    enabled: false
  telegram:
    enabled: false
    token: ${TELEGRAM_BOT_TOKEN}
personas:
  dir: ./personas
server:
  listen: %s
`, llmURL, addr))
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestBinaryConfigSetAsksTheRunningDaemon(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	addr := freePort(t)
	cfg := liveConfig(t, llm.URL, addr)
	daemonEnv := hermeticEnv(t, "SB_E2E_KEY="+e2eKey)
	p := startDaemonBin(t, daemonEnv, cfg, addr)
	// The operator's shell has the token the daemon lacks: a check in the
	// CLI's own environment would pass.
	cliEnv := append(hermeticEnv(t, "SB_E2E_KEY="+e2eKey), "TELEGRAM_BOT_TOKEN=123456:cli-only-token")
	abs, _ := filepath.Abs(cfg)

	before := readText(t, cfg)
	r := runBin(t, cliEnv, "--config", cfg, "config", "set", "channels.telegram.enabled", "true")
	expect(t, r, 1, r.stderr, "config.yaml:14: channels.telegram.token is empty")
	expect(t, r, 1, r.stderr, "nothing was written")
	if got := readText(t, cfg); got != before {
		t.Fatalf("a change the daemon refuses was written:\n%s", got)
	}
	if strings.Contains(r.stdout, "set channels.telegram.enabled") {
		t.Fatalf("the refused change was reported as done: %q", r.stdout)
	}
	noSecret(t, r, "cli-only-token")

	r = runBin(t, cliEnv, "--config", cfg, "status")
	expect(t, r, 0, r.stdout, "Switchboard status")

	// A live change: written, reloaded before the command returns.
	r = runBin(t, cliEnv, "--config", cfg, "config", "set", "llm.model", "gpt-live-1")
	expect(t, r, 0, r.stderr, "switchboard: using config "+abs)
	expect(t, r, 0, r.stdout, "set llm.model in "+abs)
	expect(t, r, 0, r.stdout, "the running daemon reloaded it: applied llm/agent")
	if !strings.Contains(readText(t, cfg), "model: gpt-live-1") {
		t.Fatalf("the accepted change is not in the file:\n%s", readText(t, cfg))
	}
	r = runBin(t, cliEnv, "--config", cfg, "status")
	expect(t, r, 0, r.stdout, "model: gpt-live-1 ")

	r = runBin(t, cliEnv, "--config", cfg, "config", "unset", "llm.model")
	expect(t, r, 0, r.stdout, "the running daemon reloaded it: applied llm/agent")
	r = runBin(t, cliEnv, "--config", cfg, "status")
	expect(t, r, 0, r.stdout, "model: gpt-4o-mini ")

	// A key read only at start: saved, and said so plainly.
	r = runBin(t, cliEnv, "--config", cfg, "config", "set", "bot.name", "Operator Bot")
	expect(t, r, 0, r.stdout, "saved; takes effect at the next restart (bot.name)")
	if !strings.Contains(readText(t, cfg), "name: Operator Bot") {
		t.Fatalf("bot.name was not written:\n%s", readText(t, cfg))
	}

	// The file broken by hand: read-only commands show the running state
	// and one warning line about the file.
	broken := strings.Replace(readText(t, cfg), "  timezone: UTC\n", "  timezone: UTC\n  nmae: typo\n", 1)
	if err := os.WriteFile(cfg, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status"}, {"sessions", "list"}, {"jobs", "list"}, {"audit"}, {"pairing", "list"}} {
		r = runBin(t, cliEnv, append([]string{"--config", cfg}, args...)...)
		if r.code != 0 {
			t.Fatalf("%v with an invalid file and the daemon running: exit %d\nstdout: %s\nstderr: %s\n%s", args, r.code, r.stdout, r.stderr, p.dump())
		}
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], "warning:") || !strings.Contains(lines[0], "config.yaml:5: unknown key \"nmae\" in bot") ||
			!strings.Contains(lines[0], "running") {
			t.Fatalf("%v: want one warning line naming config.yaml:5, got stderr:\n%s", args, r.stderr)
		}
	}
	// Broken YAML below server.listen: the lines above it still say where
	// the daemon listens.
	if err := os.WriteFile(cfg, []byte(strings.Replace(broken, "  nmae: typo\n", "", 1)+"jobs: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runBin(t, cliEnv, "--config", cfg, "status")
	expect(t, r, 0, r.stdout, "Switchboard status")
	expect(t, r, 0, r.stderr, "config.yaml:18: invalid YAML")
	if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 {
		t.Fatalf("status: want one warning line, got:\n%s", r.stderr)
	}
	noSecret(t, r, e2eKey)

	// server.listen moved in the file: the daemon still listens where it
	// started, and CLI commands still find it there (B8: they looked at the
	// new address and said the daemon was not running, or checked a change
	// in their own environment instead of asking it).
	if err := os.WriteFile(cfg, []byte(strings.Replace(broken, "  nmae: typo\n", "", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	moved := freePort(t)
	r = runBin(t, cliEnv, "--config", cfg, "config", "set", "server.listen", moved)
	expect(t, r, 0, r.stdout, "saved; takes effect at the next restart (server.listen)")
	note := "switchboard: note: the daemon listens at " + addr + "; server.listen in the config (" + moved + ") takes effect when it restarts"
	r = runBin(t, cliEnv, "--config", cfg, "config", "set", "llm.model", "gpt-after-move")
	expect(t, r, 0, r.stderr, note)
	expect(t, r, 0, r.stdout, "the running daemon reloaded it: applied llm/agent")
	for _, args := range [][]string{{"status"}, {"sessions", "list"}} {
		r = runBin(t, cliEnv, append([]string{"--config", cfg}, args...)...)
		expect(t, r, 0, r.stderr, note)
	}
	r = runBin(t, cliEnv, "--config", cfg, "status")
	expect(t, r, 0, r.stdout, "model: gpt-after-move ")
	if strings.Contains(p.dump(), e2eKey) || strings.Contains(p.dump(), "cli-only-token") {
		t.Fatal("a secret is in the daemon's log")
	}
}

// Without a daemon, `config set` checks the edit in the CLI's environment, as
// before; with the daemon stopped, read-only commands report the invalid file.
func TestBinaryConfigSetWithoutDaemon(t *testing.T) {
	cfg := liveConfig(t, "http://127.0.0.1:9/v1", freePort(t))
	before := readText(t, cfg)
	r := runBin(t, hermeticEnv(t), "--config", cfg, "config", "set", "channels.telegram.enabled", "true")
	expect(t, r, 2, r.stderr, "config.yaml:14: channels.telegram.token is empty")
	if readText(t, cfg) != before {
		t.Fatal("a refused change was written")
	}
	r = runBin(t, hermeticEnv(t, "TELEGRAM_BOT_TOKEN=1:x"), "--config", cfg, "config", "set", "channels.telegram.enabled", "true")
	expect(t, r, 0, r.stdout, "set channels.telegram.enabled in ")
	if !strings.Contains(readText(t, cfg), "enabled: true") {
		t.Fatal("the change was not written")
	}

	if err := os.WriteFile(cfg, []byte("bot:\n  nmae: typo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runBin(t, hermeticEnv(t), "--config", cfg, "status")
	expect(t, r, 2, r.stderr, "config.yaml:2: unknown key \"nmae\" in bot")
}
