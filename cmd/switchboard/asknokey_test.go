package main

// Issue 28 item 5, on the built binary: `ask` without a model says what to
// set and exits 2 (a configuration problem, README's exit codes), with the
// daemon running or not; the daemon warns once instead of logging an error
// for every message.

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const wantNoModel = "no model configured: set llm.api_key (OPENAI_API_KEY) or llm.base_url"

func TestBinaryAskWithoutModelKey(t *testing.T) {
	addr := freePort(t)
	cfg := writeConfig(t, `bot:
  data_dir: ./data
channels:
  console:
    enabled: false
personas:
  dir: ./personas
server:
  listen: `+addr+"\n")
	env := cleanEnv()

	check := func(what string, r result) {
		t.Helper()
		if r.code != 2 || !strings.Contains(r.stderr, wantNoModel) || strings.Contains(r.stderr, "Internal Server Error") {
			t.Errorf("%s: exit %d, want 2 and %q\nstdout: %s\nstderr: %s", what, r.code, wantNoModel, r.stdout, r.stderr)
		}
	}
	check("ask without the daemon", runBin(t, env, "--config", cfg, "ask", "hello"))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d := startConsDaemon(ctx, t, cfg, env)
	check("ask through the daemon", runBin(t, env, "--config", cfg, "ask", "hello"))
	check("ask through the daemon again", runBin(t, env, "--config", cfg, "ask", "hello again"))

	// Chat messages through the daemon get the setup guidance as the answer.
	chat := exec.CommandContext(ctx, binPath, "--config", cfg, "chat")
	chat.Env = env
	chat.Stdin = strings.NewReader("hello\nare you there?\n")
	out, err := chat.CombinedOutput()
	if err != nil || strings.Count(string(out), "OPENAI_API_KEY") < 2 {
		t.Errorf("chat through the daemon: %v, want the setup guidance twice\n%s", err, out)
	}

	d.stop()
	var warns []string
	for line := range strings.SplitSeq(d.log.String(), "\n") {
		switch {
		case strings.Contains(line, "level=ERROR"), strings.Contains(line, "turn failed"):
			t.Errorf("the daemon logged an error for a message without a model: %s", line)
		case strings.Contains(line, "level=WARN") && strings.Contains(strings.ToLower(line), "no model"):
			warns = append(warns, line)
		}
	}
	if len(warns) != 1 {
		t.Errorf("the daemon warned %d times about the missing model, want once:\n%s", len(warns), strings.Join(warns, "\n"))
	}
}
