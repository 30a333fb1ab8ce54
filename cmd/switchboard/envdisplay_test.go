package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// An error about a value that came from a ${VAR} reference shows the
// reference, never the daemon's (or the shell's) value of the variable:
// `config set` against the running daemon (its /admin/config/check), `config
// validate`, `doctor`, and the daemon's log and admin alert after a reload
// of a file written by hand.
func TestBinaryEnvValuesNotInPersonaErrors(t *testing.T) {
	const secret = "hunter2-topsecret"
	llm := fakellm.Start(t, fakellm.Echo())
	addr := freePort(t)
	cfg := writeConfig(t, fmt.Sprintf(`bot:
  data_dir: ./data
  timezone: UTC
  admins: ["console:user:op"]
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
channels:
  console:
    enabled: false
personas:
  dir: ./personas
  default: assistant
server:
  listen: %s
`, llm.URL, addr))
	daemonEnv := hermeticEnv(t, "SB_E2E_KEY="+e2eKey, "MYSECRET="+secret)
	p := startDaemonBin(t, daemonEnv, cfg, addr)
	cliEnv := hermeticEnv(t, "SB_E2E_KEY="+e2eKey)
	noValue := func(what, out string) {
		t.Helper()
		if strings.Contains(out, "hunter2") || strings.Contains(out, "topsecret") {
			t.Fatalf("%s shows the variable's value:\n%s", what, out)
		}
	}

	// config set: the daemon checks the edit in its environment.
	before := readText(t, cfg)
	r := runBin(t, cliEnv, "--config", cfg, "config", "set", "personas.default", "${MYSECRET}")
	expect(t, r, 1, r.stderr, `personas.default: unknown persona "${MYSECRET}"`)
	noValue("config set", r.stdout+r.stderr)
	if readText(t, cfg) != before {
		t.Fatal("a change the daemon refused was written")
	}

	// The same file through config validate and doctor in an environment
	// that has the variable.
	bad := strings.Replace(before, "  default: assistant\n", "  default: ${MYSECRET}\n  by_channel:\n    telegram: ${MYSECRET}\n", 1) +
		"jobs:\n  - name: daily\n    schedule: \"@daily\"\n    prompt: hi\n    persona: x-${MYSECRET}\n    deliver_to: [\"telegram:1\"]\n"
	other := writeConfig(t, bad)
	r = runBin(t, daemonEnv, "--config", other, "config", "validate")
	expect(t, r, 2, r.stderr, `personas.default: unknown persona "${MYSECRET}"`)
	expect(t, r, 2, r.stderr, `personas.by_channel.telegram: unknown persona "${MYSECRET}"`)
	expect(t, r, 2, r.stderr, `jobs[0].persona: unknown persona "x-${MYSECRET}"`)
	noValue("config validate", r.stdout+r.stderr)
	// doctor checks the names against the persona files it finds.
	pdir := filepath.Join(filepath.Dir(other), "personas")
	if err := os.MkdirAll(pdir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pdir, "assistant.md"), []byte("---\ndescription: A\n---\nYou help.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runBin(t, daemonEnv, "--config", other, "doctor")
	noValue("doctor", r.stdout+r.stderr)
	if !strings.Contains(r.stdout+r.stderr, "${MYSECRET}") {
		t.Fatalf("doctor does not name the reference:\n%s%s", r.stdout, r.stderr)
	}

	// Written by hand and reloaded: the ERROR line and the admin alert.
	if err := os.WriteFile(cfg, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Process.Signal(syscall.SIGHUP)
	awaitCond(t, "the rejected reload in the log", func() bool {
		return strings.Contains(p.stderr.String(), "admin alert") && strings.Contains(p.stderr.String(), `unknown persona \"${MYSECRET}\"`)
	}, p.dump)
	noValue("the daemon's log", p.dump())
}
