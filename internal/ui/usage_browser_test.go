package ui_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/testkit/browser"
	"github.com/switchboard-bot/switchboard/memory"
)

// browserUsageTurn is a committed turn on day with the given tokens.
func browserUsageTurn(day, persona, job, model string, prompt, completion int) memory.Turn {
	now := time.Now()
	u := memory.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	return memory.Turn{ID: "t-" + day + persona, Day: day, Persona: persona, Job: job, Usage: u, Started: now, Ended: now,
		Models:       []memory.ModelUsage{{Model: model, Usage: u}},
		FinishReason: "final", Answer: "ok", Messages: []memory.Message{{Role: memory.RoleUser, Content: "hi", Time: now}}}
}

// Issue 30: the Usage page, in a browser, after a real chat turn and with
// recorded turns of other chats: today's tokens, the per-day chart with its
// date axis, the top chats, models and personas — every name shown as the
// text it is, no script run, no CSP violation.
func TestBrowserUsagePage(t *testing.T) {
	r := startRig(t, rigOptions{})
	p := r.browse()
	openChat(p, r.base)
	say(p, "count my tokens")
	p.WaitText("#chat-history .msg.assistant", "count my tokens")

	ctx := context.Background()
	st := r.d.Store()
	cfg, err := config.Load(r.path)
	if err != nil {
		t.Fatal(err)
	}
	loc := cfg.Bot.Location()
	today := memory.DayOf(time.Now(), loc)
	yesterday := memory.DayOf(time.Now().Add(-24*time.Hour), loc)
	const hostile = `<img src=x onerror=alert(1)>`
	// The screenshot first, before the chat whose name is markup is there.
	if err := st.AppendTurn(ctx, "job:report", browserUsageTurn(yesterday, "reporter", "report", "llama3", 9000, 1000)); err != nil {
		t.Fatal(err)
	}
	p.Navigate(r.base + "/ui/usage")
	p.WaitText("#usage-jobs", "report")
	r.screenshot(p, "usage")

	if err := st.AppendTurn(ctx, "telegram:"+hostile, browserUsageTurn(today, hostile, "", "gpt-4o-mini", 40000, 2000)); err != nil {
		t.Fatal(err)
	}
	p.Navigate(r.base + "/ui/usage")
	p.WaitText("#usage-chats", "telegram:"+hostile)
	chats := tableRows(p, "#usage-chats")
	if !strings.Contains(chats, "telegram:"+hostile+"|42,000") || !strings.Contains(chats, "job:report|10,000") ||
		!strings.Contains(chats, "web:") {
		t.Errorf("top chats table:\n%s", chats)
	}
	if models := tableRows(p, "#usage-models"); !strings.Contains(models, "gpt-4o-mini|42,000") || !strings.Contains(models, "llama3|10,000") {
		t.Errorf("models table:\n%s", models)
	}
	if personas := tableRows(p, "#usage-personas"); !strings.Contains(personas, hostile) || !strings.Contains(personas, "reporter") {
		t.Errorf("personas table:\n%s", personas)
	}
	if jobs := tableRows(p, "#usage-jobs"); !strings.Contains(jobs, "report|10,000") {
		t.Errorf("jobs table:\n%s", jobs)
	}
	if n := p.Count("#usage-chart rect"); n != 2 {
		t.Errorf("the chart has %d bars, want 2 (yesterday, today)", n)
	}
	if axis := p.Text("#usage-chart"); !strings.Contains(axis, today) {
		t.Errorf("the chart's date axis lacks today (%s): %q", today, axis)
	}
	if n := p.Count(`main img, [onerror]`); n != 0 {
		t.Errorf("%d element(s) from the hostile text: the text became markup", n)
	}
	p.NoScriptRan()
	if v := p.CSPViolations(); len(v) != 0 {
		t.Errorf("CSP violations: %v", v)
	}
	r.noSecretShown(p)
}

// tableRows is the body rows of table sel, cells joined by "|", one row a line.
func tableRows(p *browser.Page, sel string) string {
	return p.Eval(`Array.from(document.querySelectorAll(` + strconv.Quote(sel+" tbody tr") +
		`)).map(tr => Array.from(tr.cells).map(c => c.textContent).join("|")).join("\n")`)
}
