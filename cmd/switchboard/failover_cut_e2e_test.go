package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// Issue 30 (failover), on the built binary: the primary's connection is
// cut after half its answer. With llm.max_retries: 0 the primary is asked
// exactly once, and `ask` prints the fallback's whole answer and nothing of
// the primary's half.
func TestBinaryFailoverCutMidStream(t *testing.T) {
	primary := fakellm.Start(t, fakellm.Reply(fakellm.Response{
		Content: "PRIMARY-HALF one two three four five six seven eight", ChunkSize: 5, CutAfter: 4}))
	fallback := fakellm.Start(t, fakellm.Text("the fallback's whole answer"))
	addr := freePort(t)
	cfg := writeConfig(t, fmt.Sprintf(`bot:
  data_dir: ./data
  timezone: UTC
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
  model: main-model
  max_retries: 0
  fallbacks:
    - {base_url: %s, api_key: "${SB_FB_KEY}", model: fallback-model}
channels:
  console:
    enabled: false
personas:
  dir: ./personas
server:
  listen: %s
`, primary.URL, fallback.URL, addr))
	env := cleanEnv("SB_E2E_KEY="+e2eKey, "SB_FB_KEY="+e2eFallbackKey)
	d := startDaemonBin(t, env, cfg, addr)
	r := runBin(t, env, "--config", cfg, "ask", "a question")
	noSecret(t, r, e2eKey)
	noSecret(t, r, e2eFallbackKey)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "the fallback's whole answer" {
		t.Fatalf("ask: exit %d\nstdout: %s\nstderr: %s\n%s", r.code, r.stdout, r.stderr, d.dump())
	}
	if n := primary.RequestCount(); n != 1 {
		t.Errorf("the primary was asked %d times with llm.max_retries: 0, want once", n)
	}
	if n := fallback.RequestCount(); n != 1 {
		t.Errorf("the fallback was asked %d times, want once", n)
	}
}
