package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// Issue 30 (budgets), on the built binary: a Telegram chat with
// llm.budget.per_chat_daily_tokens: 100 uses it up (each answer costs 70
// tokens; the call that crosses completes); its next message gets the
// short budget reply and the model gets no request at all; /usage shows the
// chat its use; /metrics counts the tokens by model and the refusal.
func TestBinaryBudgetExhausted(t *testing.T) {
	llm := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
		return fakellm.Response{Content: "echo: " + fakellm.StripRuntimeContext(r.LastUserText()),
			Usage: &fakellm.Usage{PromptTokens: 60, CompletionTokens: 10}}
	})
	tg := faketelegram.New(t, faketelegram.Options{})
	addr := freePort(t)
	cfg := writeConfig(t, fmt.Sprintf(`bot:
  data_dir: ./data
  timezone: Europe/Berlin
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
  model: budget-model
  max_retries: 0
  budget: {per_chat_daily_tokens: 100}
  prices:
    budget-model: {input_per_mtok: 1000, output_per_mtok: 2000}
access:
  mode: open
channels:
  console:
    enabled: false
  telegram:
    enabled: true
    token: ${SB_TG_TOKEN}
    api_url: %s
personas:
  dir: ./personas
server:
  listen: %s
`, llm.URL, tg.URL(), addr))
	env := cleanEnv("SB_E2E_KEY="+e2eKey, "SB_TG_TOKEN="+faketelegram.DefaultToken)
	d := startDaemonBin(t, env, cfg, addr)
	const chat = 4242
	const hang = 2 * time.Minute // a hang detector, not a performance bound
	say := func(text string, n int) string {
		t.Helper()
		tg.UserSays(chat, text)
		sent := tg.WaitSent(t, chat, n, hang)
		return sent[n-1].Plain
	}
	if got := say("one", 1); got != "echo: one" {
		t.Fatalf("first answer %q\n%s", got, d.dump())
	}
	if got := say("two", 2); got != "echo: two" { // 70 → 140: the crossing call completes
		t.Fatalf("second answer %q\n%s", got, d.dump())
	}
	before := llm.RequestCount()
	got := say("three", 3)
	if !strings.HasPrefix(got, "This chat has used its 100 tokens for today; I can answer again at 00:00 Europe/Berlin (in ") {
		t.Fatalf("third answer %q, want the budget reply\n%s", got, d.dump())
	}
	if n := llm.RequestCount(); n != before {
		t.Fatalf("the model got %d more request(s) after the budget was used up", n-before)
	}
	usage := say("/usage", 4)
	for _, want := range []string{"Usage of this chat today: 140 tokens (120 in, 20 out) · 0.16",
		"100 tokens a day for this chat, 0 left"} {
		if !strings.Contains(usage, want) {
			t.Errorf("/usage =\n%s\nwant %q", usage, want)
		}
	}
	if n := llm.RequestCount(); n != before {
		t.Errorf("/usage made a model request")
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`switchboard_tokens_total{kind="prompt",model="budget-model"} 120`,
		`switchboard_tokens_total{kind="completion",model="budget-model"} 20`,
		`switchboard_budget_refusals_total{scope="chat"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	d.stop(t)
	if logs := d.dump(); strings.Contains(logs, e2eKey) {
		t.Fatalf("the key in the daemon's output")
	}
}
