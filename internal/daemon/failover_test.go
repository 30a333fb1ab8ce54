package daemon

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
)

const failoverConfig = `bot:
  data_dir: ./data
llm:
  base_url: %LLM%
  api_key: test-key
  max_retries: 0
  fallbacks:
    - {base_url: %FB%, model: fb-model}
access:
  mode: open
channels:
  console:
    enabled: false
personas:
  dir: ./personas
  default: assistant
server:
  listen: 127.0.0.1:0
`

// llm.fallbacks through the daemon: a primary answering 503 hands the chat
// to the fallback; /status names it, the audit records the failover; a
// reload that changes llm.fallbacks takes effect at the next turn.
func TestDaemonFailoverStatusAuditAndReload(t *testing.T) {
	primary := fakellm.Start(t, fakellm.Reply(fakellm.Response{Status: 503}))
	fb1 := fakellm.Start(t, fakellm.Text("fallback one here"))
	fb2 := fakellm.Start(t, fakellm.Text("fallback two here"))
	l := startLive(t, primary, strings.ReplaceAll(failoverConfig, "%FB%", fb1.URL), false)

	if got := l.ask("c1", "ann", "hello", 1); got != "fallback one here" {
		t.Fatalf("answer %q", got)
	}
	st := l.d.StatusText(context.Background())
	for _, want := range []string{
		"model endpoint primary (gpt-4o-mini): cooling down since ",
		"model endpoint fallback 1 (fb-model at " + fb1.URL + "): up, last answered ",
		" by fb-model\n",
	} {
		if !strings.Contains(st, want) {
			t.Errorf("status lacks %q:\n%s", want, st)
		}
	}
	if strings.Contains(st, "test-key") {
		t.Errorf("status shows the key:\n%s", st)
	}
	rep := l.d.StatusReport(context.Background())
	if eps := rep.Model.Endpoints; len(eps) != 2 || eps[1].LastModel != "fb-model" || eps[0].State != "cooling down" {
		t.Errorf("status report endpoints %+v", eps)
	}
	all, err := l.d.store.ListAudit(context.Background(), memory.AuditFilter{Session: "memory:c1"})
	var recs []memory.AuditRecord
	for _, r := range all {
		if r.Action == "model.failover" {
			recs = append(recs, r)
		}
	}
	if err != nil || len(recs) != 1 || recs[0].Detail != "answered by fb-model (fallback 1)" {
		t.Errorf("audit %+v, %v", all, err)
	}

	old, _ := os.ReadFile(l.path)
	writeFile(t, l.path, strings.Replace(string(old), fb1.URL, fb2.URL, 1))
	res, err := l.d.Reload(context.Background(), "test")
	if err != nil || !strings.Contains(res.String(), "llm/agent") {
		t.Fatalf("reload: %v, %v", res, err)
	}
	if got := l.ask("c1", "ann", "again", 2); got != "fallback two here" {
		t.Fatalf("after the reload: %q", got)
	}
}
