package ui_test

// Browser tests of issue 34, items 2, 3 and 5: the turn's waterfall, the
// navigation's badges for what waits, and the overview's charts built from
// the store. Each drives the real daemon through headless Chromium, and
// each tries hostile text where it renders names.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/testkit/browser"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
)

// hostileName is markup where a name is shown: a tool name the model made
// up, a chat's key.
const hostileName = `<img src=x onerror=alert(1)>`

// badge is the JavaScript condition "the badge id shows n" (n == 0: hidden).
func badge(id string, n int) string {
	if n == 0 {
		return fmt.Sprintf(`document.getElementById(%q).hidden`, id)
	}
	return fmt.Sprintf(`(b => !b.hidden && b.textContent === "%d" && b.getClientRects().length > 0)(document.getElementById(%q))`, n, id)
}

// noMarkupFrom fails the test when hostile text became an element.
func noMarkupFrom(t *testing.T, p *browser.Page, where string) {
	t.Helper()
	for _, sel := range []string{`main img`, `[onerror]`, `main script`} {
		if n := p.Count(sel); n != 0 {
			t.Errorf("%s: %d element(s) match %s: text became markup", where, n, sel)
		}
	}
	p.NoScriptRan()
}

// Issue 34, item 3: the navigation shows how many pairing codes and tool
// calls wait, on every page, and the counts change while the page is open
// (the attention stream), without a reload. Deciding makes them go away.
// Item 2: the decided turn's waterfall has the approval wait as a bar.
func TestBrowserNavBadgesShowWhatWaitsLive(t *testing.T) {
	llm := fakellm.Match(
		fakellm.Rule{When: fakellm.AfterToolResult, Respond: fakellm.Reply(fakellm.Response{Content: "It ran."})},
		fakellm.Rule{Respond: fakellm.Reply(fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "current_time", Arguments: `{}`}}})},
	)
	r := startRig(t, rigOptions{LLM: llm, Telegram: true, Agent: "  require_approval: [current_time]\n"})
	p := r.browse()
	mark := p.ResponseMark()
	p.Navigate(r.base + "/ui/sessions")
	p.WaitResponse(mark, "/ui/live/attention")
	p.WaitFor("no badges while nothing waits", badge("badge-pairing", 0)+" && "+badge("badge-approvals", 0))

	r.tg.UserSays(stranger, "hello bot")
	p.WaitFor("the pairing badge at 1, live", badge("badge-pairing", 1))

	ch := r.d.WebChannel()
	if _, err := ch.Post(context.Background(), "appr", "operator", "what time is it?"); err != nil {
		t.Fatal(err)
	}
	p.WaitFor("the approvals badge at 1, live", badge("badge-approvals", 1))
	if p.Location() != r.base+"/ui/sessions" {
		t.Fatalf("the page changed: %s", p.Location())
	}
	r.screenshot(p, "badges")

	// A phone: the collapsed menu's button carries the sum.
	phone(t, p)
	p.Navigate(r.base + "/ui/jobs")
	p.WaitFor("the menu button's badge at 2", badge("badge-menu", 2))
	desktop(t, p)

	p.Navigate(r.base + "/ui/approvals")
	p.ClickAndLoad(`#approvals form[action="/ui/approvals/approve"] button`)
	p.WaitFor("the approvals badge gone", badge("badge-approvals", 0))
	p.WaitFor("the pairing badge still there", badge("badge-pairing", 1))
	p.Navigate(r.base + "/ui/pairing")
	p.ClickAndLoad(`#pairing form[action="/ui/pairing/deny"] button`)
	p.WaitFor("every badge gone", badge("badge-pairing", 0)+" && "+badge("badge-menu", 0))

	// The approved turn's waterfall: the wait for the decision is a bar.
	eventually(t, "the answer after the approval", func() bool {
		for _, ev := range ch.History("appr") {
			if ev.Text == "It ran." {
				return true
			}
		}
		return false
	})
	reloadUntil(t, p, r.base+"/ui/sessions/show?key=web:appr", "the turn with its delivery",
		`document.querySelector("svg.waterfall [data-lane=delivery]")`)
	if n := p.Count(`svg.waterfall [data-lane="approval"]`); n != 1 {
		t.Errorf("the waterfall shows %d approval waits, want 1: %q", n, p.Text("svg.waterfall"))
	}
	p.NoScriptRan()
	r.noSecretShown(p)
}

// Issue 34, item 3 (security): the attention stream answers nobody without
// a session, and its counts are numbers, never text from a chat.
func TestAttentionStreamNeedsASession(t *testing.T) {
	r := startConsole(t, cOptions{Telegram: true})
	r.tg.UserSays(stranger, hostileName)
	c := newClient(t, r.base)
	got := c.get("/ui/live/attention")
	if got.Code != http.StatusUnauthorized || strings.Contains(got.Body, "pairing") {
		t.Fatalf("without a session: %d %q", got.Code, got.Body)
	}
	c.login(cAdminToken)
	cEventually(t, "the pairing code", func() bool { return strings.Contains(c.get("/ui/pairing").Body, "777001") })
	ev := nextEvent(t, c.stream("/ui/live/attention"), "attention")
	if ev.Data != `{"pairing":1,"approvals":0}` {
		t.Errorf("the attention event is %q", ev.Data)
	}
	code := regexp.MustCompile(`data-code="([^"]+)"`).FindStringSubmatch(c.get("/ui/pairing").Body)
	if code == nil {
		t.Fatal("no code on the pairing page")
	}
	// A forged decision (no CSRF token) changes nothing: the badge stays.
	if got := c.post("/ui/pairing/deny", url.Values{"csrf": {""}, "code": {code[1]}}); got.Code != http.StatusForbidden {
		t.Errorf("a decision without the CSRF token: %d", got.Code)
	}
	page := c.get("/ui/audit")
	if !regexp.MustCompile(`id="badge-pairing"[^>]*>1</span>`).MatchString(page.Body) {
		t.Errorf("a page renders no pairing badge of 1")
	}
	if strings.Contains(page.Body, hostileName) {
		t.Error("the stranger's text reached a page through the badges")
	}
}

// Issue 34, item 2: a turn's timeline is a waterfall — the model calls and
// each tool as bars with their durations, the table of states kept behind
// it. A tool name the model made up and hostile arguments show as text.
func TestBrowserTurnWaterfall(t *testing.T) {
	llm := fakellm.Match(
		fakellm.Rule{When: fakellm.AfterToolResult, Respond: fakellm.Reply(fakellm.Response{Content: "All done."})},
		fakellm.Rule{Respond: fakellm.Reply(fakellm.Response{ToolCalls: []fakellm.ToolCall{
			{Name: "current_time", Arguments: `{}`},
			{Name: hostileName, Arguments: `{"q":"<script>alert(2)</script>"}`}}})},
	)
	r := startRig(t, rigOptions{LLM: llm})
	p := r.browse()
	conv := openChat(p, r.base)
	say(p, "what time is it?")
	p.WaitText("#chat-history .msg.assistant", "All done.")

	check := func(where string) {
		t.Helper()
		p.Click("#chat-history details.trace > summary, .turns details.trace > summary")
		p.WaitVisible("details.trace[open] svg.waterfall")
		lanes := p.Eval(`Array.from(document.querySelectorAll("svg.waterfall [data-lane]")).map(g => g.getAttribute("data-lane") + ":" + g.textContent.trim().replace(/\s+/g, " ")).join("\n")`)
		for _, want := range []string{"model:model call 1", "model:model call 2", "tool:current_time", "tool:" + hostileName} {
			if !strings.Contains(lanes, want) {
				t.Errorf("%s: the waterfall lacks %q:\n%s", where, want, lanes)
			}
		}
		if !regexp.MustCompile(`model call 1 \d+(\.\d+)?(ms|s|µs)|model call 1 <1ms`).MatchString(lanes) {
			t.Errorf("%s: the model call shows no duration:\n%s", where, lanes)
		}
		if n := p.Count("details.trace[open] svg.waterfall rect.bar"); n < 4 {
			t.Errorf("%s: %d bars, want one per model call and tool", where, n)
		}
		if p.Count("details.trace[open] details.steps table.timeline") != 1 || p.Count("details.trace[open] details.steps[open]") != 0 {
			t.Errorf("%s: the table of states is not kept (closed) behind the waterfall", where)
		}
		noMarkupFrom(t, p, where)
	}
	check("chat")
	p.Navigate(r.base + "/ui/sessions/show?key=web:" + conv)
	p.WaitVisible(".turns")
	check("session")
	p.Eval(`document.querySelector("details.trace[open]").scrollIntoView()`)
	r.screenshot(p, "waterfall")
	colorScheme(t, p, "dark")
	r.screenshot(p, "waterfall-dark")
	if strings.Contains(p.Eval(`document.documentElement.outerHTML`), "<script>alert(2)") {
		t.Error("the hostile arguments are in the page as markup")
	}
}

// chartTurn is a turn of an earlier process, finished at ended.
func chartTurn(id string, ended time.Time, loc *time.Location, tokens int) memory.Turn {
	u := memory.Usage{PromptTokens: tokens, TotalTokens: tokens}
	return memory.Turn{ID: id, Day: memory.DayOf(ended, loc), Started: ended.Add(-1500 * time.Millisecond), Ended: ended,
		Usage: u, Models: []memory.ModelUsage{{Model: "fake-model", Usage: u}}, FinishReason: "final", Answer: "ok",
		Messages: []memory.Message{{Role: memory.RoleUser, Content: "hi", Time: ended.Add(-2 * time.Second)},
			{Role: memory.RoleAssistant, Content: "ok", Time: ended}}}
}

// Issue 34, item 5: the overview's charts survive a restart — turns the
// store holds from before this process started are in the hour and day
// charts, the day axis shows dates, and tokens per day come from the usage
// book. A chat whose key is markup shows as text.
func TestBrowserOverviewChartsComeFromTheStore(t *testing.T) {
	r := startRig(t, rigOptions{})
	cfg, err := config.Load(r.path)
	if err != nil {
		t.Fatal(err)
	}
	loc := cfg.Bot.Location()
	now := time.Now()
	st := r.d.Store()
	for i, c := range []struct {
		key   string
		ago   time.Duration
		token int
	}{
		{"telegram:" + hostileName, 20 * time.Minute, 1000},
		{"telegram:" + hostileName, 25 * time.Minute, 1000},
		{"telegram:42", 30 * time.Minute, 500},
		{"telegram:42", 5 * time.Hour, 500},
		{"telegram:42", 3 * 24 * time.Hour, 7000},
	} {
		if err := st.AppendTurn(context.Background(), c.key, chartTurn(fmt.Sprintf("old-%d", i), now.Add(-c.ago), loc, c.token)); err != nil {
			t.Fatal(err)
		}
	}
	p := r.browse()
	p.Navigate(r.base + "/ui/")
	p.WaitVisible("#chart-days")
	if got := p.Text("#turns-last-hour"); got != "3" {
		t.Errorf("turns in the last hour: %q, want the 3 of the earlier process", got)
	}
	if n := p.Count("#chart-hour-turns rect"); n < 2 {
		t.Errorf("the hour's turn chart has %d bars, want the earlier turns", n)
	}
	if n := p.Count("#chart-day-turns rect"); n < 2 {
		t.Errorf("the day's turn chart has %d bars, want the earlier turns", n)
	}
	day := p.Text("#chart-day-turns")
	if !regexp.MustCompile(`\d{2}-\d{2} \d{2}:\d{2}`).MatchString(day) {
		t.Errorf("the day chart's axis shows no dates: %q", day)
	}
	days := p.Text("#chart-days")
	for _, want := range []string{memory.DayOf(now, loc), memory.DayOf(now.Add(-3*24*time.Hour), loc) + ": 7,000 tokens",
		"most by telegram:" + hostileName} {
		if !strings.Contains(days, want) {
			t.Errorf("the tokens-per-day chart lacks %q: %q", want, days)
		}
	}
	noMarkupFrom(t, p, "overview")
	shots := []struct {
		name   string
		phone  bool
		scheme string
	}{{"overview", false, "light"}, {"overview-dark", false, "dark"}, {"overview-phone", true, "light"}, {"overview-phone-dark", true, "dark"}}
	for _, s := range shots {
		if s.phone {
			phone(t, p)
		}
		colorScheme(t, p, s.scheme)
		p.Navigate(r.base + "/ui/")
		p.WaitVisible("#chart-days")
		if msg := p.Eval(overflowJS); s.phone && msg != "" {
			t.Errorf("the overview on a phone: %s", msg)
		}
		r.screenshot(p, s.name)
	}
	desktop(t, p)
	colorScheme(t, p, "light")
	// The live refresh keeps them.
	p.WaitFor("a live refresh", `(() => { window.__o = window.__o || document.getElementById("chart-days"); return document.getElementById("chart-days") !== window.__o; })()`)
	if n := p.Count("#chart-hour-turns rect"); n < 2 {
		t.Errorf("after a live refresh the hour chart has %d bars", n)
	}
	noMarkupFrom(t, p, "overview, refreshed")
}
