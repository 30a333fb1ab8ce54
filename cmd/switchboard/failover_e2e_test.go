package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

const e2eFallbackKey = "sk-fallback-e2e-secret-1357924680"

// fallbackSays answers "<who>: <the user's text>".
func fallbackSays(who string) fakellm.Responder {
	return func(r *fakellm.Request) fakellm.Response {
		return fakellm.Response{Content: who + ": " + fakellm.StripRuntimeContext(r.LastUserText())}
	}
}

// Issue 30 (failover), on the built binary: a conversation runs on the
// primary; the primary goes away mid-conversation; the next message is
// answered by llm.fallbacks[0], with the conversation so far; `status` (text
// and --json) and /metrics name the fallback as the model that answered,
// and no key shows anywhere.
func TestBinaryFailoverToFallback(t *testing.T) {
	primary := fakellm.Start(t, fallbackSays("primary"))
	fallback := fakellm.Start(t, fallbackSays("fallback"))
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
log:
  level: debug
`, primary.URL, fallback.URL, addr))
	env := cleanEnv("SB_E2E_KEY="+e2eKey, "SB_FB_KEY="+e2eFallbackKey)
	d := startDaemonBin(t, env, cfg, addr)
	check := func(r result, what string, ok bool) {
		t.Helper()
		noSecret(t, r, e2eKey)
		noSecret(t, r, e2eFallbackKey)
		if !ok {
			t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s\n%s", what, r.code, r.stdout, r.stderr, d.dump())
		}
	}

	r := runBin(t, env, "--config", cfg, "ask", "the first question")
	check(r, "ask on the primary", r.code == 0 && strings.TrimSpace(r.stdout) == "primary: the first question")

	primary.Close() // the primary goes away mid-conversation
	r = runBin(t, env, "--config", cfg, "ask", "the second question")
	check(r, "ask after the primary went away", r.code == 0 && strings.TrimSpace(r.stdout) == "fallback: the second question")
	req := fallback.LastRequest()
	if req == nil || req.Body.Model != "fallback-model" || req.Header.Get("Authorization") != "Bearer "+e2eFallbackKey ||
		!strings.Contains(fmt.Sprint(req.Body.Messages), "primary: the first question") {
		t.Fatalf("the fallback did not continue the conversation: %+v", req)
	}

	r = runBin(t, env, "--config", cfg, "status")
	check(r, "status", r.code == 0 &&
		strings.Contains(r.stdout, "model endpoint primary (main-model): cooling down since ") &&
		strings.Contains(r.stdout, "model endpoint fallback 1 (fallback-model at "+fallback.URL+"): up, last answered ") &&
		strings.Contains(r.stdout, " by fallback-model"))

	r = runBin(t, env, "--config", cfg, "status", "--json")
	check(r, "status --json", r.code == 0)
	var rep struct {
		Model struct {
			Endpoints []struct {
				Name, Model, State string
				LastModel          string `json:"last_model"`
			} `json:"endpoints"`
		} `json:"model"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	if eps := rep.Model.Endpoints; len(eps) != 2 || eps[0].State != "cooling down" || eps[1].Name != "fallback 1" ||
		eps[1].State != "up" || eps[1].LastModel != "fallback-model" {
		t.Fatalf("status --json endpoints: %+v", eps)
	}

	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`switchboard_model_calls_total{endpoint="primary",model="main-model",outcome="ok"} 1`,
		`switchboard_model_calls_total{endpoint="primary",model="main-model",outcome="failed"} 1`,
		`switchboard_model_calls_total{endpoint="fallback 1",model="fallback-model",outcome="ok"} 1`,
		`switchboard_model_failovers_total{from="primary",to="fallback 1"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	d.stop(t)
	logs := d.dump()
	if strings.Contains(logs, e2eKey) || strings.Contains(logs, e2eFallbackKey) {
		t.Fatalf("a key in the daemon's output:\n%s", logs)
	}
	if !strings.Contains(logs, "failing over") {
		t.Errorf("no failover warning in the log:\n%s", logs)
	}
}
