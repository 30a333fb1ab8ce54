package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
)

// budgetRig is an agent over a real store whose usage book feeds the
// budget, with one settable clock for the agent, the store and the budget.
type budgetRig struct {
	h     *harness
	st    memory.Store
	clk   *clock
	loc   *time.Location
	scope []string // refusals seen by OnRefuse
}

func newBudgetRig(t *testing.T, r fakellm.Responder, bo BudgetOptions, start time.Time, loc *time.Location, tools ...Tool) *budgetRig {
	t.Helper()
	rig := &budgetRig{clk: &clock{t: start}, loc: loc}
	rig.st = openTestStore(t, rig.clk.now)
	bo.Book, bo.Location, bo.Now = rig.st, loc, rig.clk.now
	bo.OnRefuse = func(s string) { rig.scope = append(rig.scope, s) }
	rig.h = newHarness(t, r, func(o *Options) {
		o.Sessions, o.Now, o.Location, o.Gate = rig.st, rig.clk.now, loc, NewBudget(bo)
	}, tools...)
	return rig
}

// usage70 answers every call with 60 prompt and 10 completion tokens.
func usage70(next fakellm.Responder) fakellm.Responder {
	return func(r *fakellm.Request) fakellm.Response {
		resp := next(r)
		resp.Usage = &fakellm.Usage{PromptTokens: 60, CompletionTokens: 10}
		return resp
	}
}

func (rig *budgetRig) ask(t *testing.T, key, text string, admin bool) Result {
	t.Helper()
	res, err := rig.h.agent.ProcessMessage(context.Background(), Request{SessionKey: key, Text: text, Admin: admin})
	if err != nil {
		t.Fatalf("turn of %s: %v", key, err)
	}
	return res
}

func TestBudgetCrossingCallCompletesNextIsRefused(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	// 20:48 in Berlin: 3 h 12 min to midnight.
	start := time.Date(2025, 3, 1, 20, 48, 0, 0, berlin)
	tool := constTool("lookup", "found it")
	rig := newBudgetRig(t, usage70(toolsThenAnswer("done", []fakellm.ToolCall{call("lookup", `{}`)})),
		BudgetOptions{PerChatDaily: 100}, start, berlin, tool)

	// Turn 1: two calls; the second crosses 100 (70 → 140) and completes.
	res := rig.ask(t, "telegram:1", "first", false)
	if res.Text != "done" || res.FinishReason != FinishFinal || rig.h.srv.RequestCount() != 2 {
		t.Fatalf("first turn: %q (%s), %d requests; want the answer after 2 requests", res.Text, res.FinishReason, rig.h.srv.RequestCount())
	}
	// Turn 2: refused before any request, with the short reply.
	res = rig.ask(t, "telegram:1", "second", false)
	want := "This chat has used its 100 tokens for today; I can answer again at 00:00 Europe/Berlin (in 3 h 12 min)."
	if res.Text != want || res.FinishReason != FinishBudget {
		t.Errorf("refused turn: %q (%s), want %q", res.Text, res.FinishReason, want)
	}
	if n := rig.h.srv.RequestCount(); n != 2 {
		t.Errorf("the model got %d requests, want still 2", n)
	}
	// The refused message is committed as answered (history holds it).
	turns, err := rig.st.SessionTurns(context.Background(), "telegram:1")
	if err != nil || len(turns) != 2 || turns[1].Answer != want || turns[1].FinishReason != string(FinishBudget) {
		t.Fatalf("turns on disk: %+v (%v)", turns, err)
	}
	// Another chat is not limited by this chat's budget.
	if res := rig.ask(t, "telegram:2", "hello", false); res.FinishReason != FinishFinal {
		t.Errorf("another chat: %q (%s)", res.Text, res.FinishReason)
	}
	if strings.Join(rig.scope, ",") != "chat" {
		t.Errorf("refusals counted: %v, want [chat]", rig.scope)
	}
	// The record: persona, model and tokens per model.
	if u, _ := rig.st.UsageOn(context.Background(), "2025-03-01", "telegram:1"); u.TotalTokens != 140 {
		t.Errorf("usage book of telegram:1 today: %+v, want 140 tokens", u)
	}
	if m := turns[0].Models; len(m) != 1 || m[0].Model != "fake-model" || m[0].Usage.TotalTokens != 140 || turns[0].Persona == "" {
		t.Errorf("first turn recorded models %+v persona %q", m, turns[0].Persona)
	}
}

func TestBudgetRefusesMidTurnAndKeepsToolResults(t *testing.T) {
	tool := constTool("lookup", "found it")
	steps := []fakellm.ToolCall{call("lookup", `{}`)}
	rig := newBudgetRig(t, usage70(toolsThenAnswer("done", steps, steps, steps)),
		BudgetOptions{Daily: 100}, testNow, time.UTC, tool)
	res := rig.ask(t, "telegram:1", "go", false)
	if rig.h.srv.RequestCount() != 2 {
		t.Errorf("requests = %d, want 2 (the crossing one completes, the third is not made)", rig.h.srv.RequestCount())
	}
	if res.FinishReason != FinishBudget || !strings.HasPrefix(res.Text, "Today's budget of 100 tokens is used up; I can answer again at 00:00 UTC (in 14 h)") {
		t.Errorf("answer %q (%s)", res.Text, res.FinishReason)
	}
	if got := len(tool.Calls()); got != 2 {
		t.Errorf("tool ran %d times, want 2", got)
	}
	turns, _ := rig.st.SessionTurns(context.Background(), "telegram:1")
	if len(turns) != 1 || turns[0].Usage.TotalTokens != 140 {
		t.Errorf("committed turns %+v, want one with 140 tokens", turns)
	}
}

func TestBudgetAdmins(t *testing.T) {
	for _, tc := range []struct {
		name        string
		limitAdmins bool
		wantRefused bool
	}{
		{"admins are not limited by default", false, false},
		{"admins limited when configured", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := newBudgetRig(t, usage70(fakellm.Text("hi")), BudgetOptions{PerChatDaily: 50, Daily: 60, Admins: tc.limitAdmins},
				testNow, time.UTC)
			rig.ask(t, "telegram:1", "spend", true)
			res := rig.ask(t, "telegram:1", "again", true)
			if refused := res.FinishReason == FinishBudget; refused != tc.wantRefused {
				t.Errorf("admin's second turn: %q (%s), refused=%v want %v", res.Text, res.FinishReason, refused, tc.wantRefused)
			}
			// A non-admin is limited either way.
			if res := rig.ask(t, "telegram:1", "me too", false); res.FinishReason != FinishBudget {
				t.Errorf("non-admin: %q (%s), want refused", res.Text, res.FinishReason)
			}
		})
	}
}

func TestBudgetResetsAtMidnightInTimezone(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	start := time.Date(2025, 3, 1, 23, 50, 0, 0, berlin) // 22:50 UTC
	rig := newBudgetRig(t, usage70(fakellm.Text("hi")), BudgetOptions{PerChatDaily: 50}, start, berlin)
	rig.ask(t, "telegram:1", "spend", false)
	res := rig.ask(t, "telegram:1", "more", false)
	if !strings.Contains(res.Text, "00:00 Europe/Berlin (in 10 min)") {
		t.Errorf("refusal %q, want the reset at 00:00 Europe/Berlin in 10 min", res.Text)
	}
	rig.clk.set(time.Date(2025, 3, 1, 23, 59, 59, 0, berlin))
	if res := rig.ask(t, "telegram:1", "still today", false); res.FinishReason != FinishBudget {
		t.Errorf("one second before midnight: %q, want refused", res.Text)
	}
	// 00:00:30 in Berlin is still 23:00:30 UTC on the 1st: the budget's day
	// is Berlin's.
	rig.clk.set(time.Date(2025, 3, 2, 0, 0, 30, 0, berlin))
	n := rig.h.srv.RequestCount()
	if res := rig.ask(t, "telegram:1", "new day", false); res.FinishReason != FinishFinal || rig.h.srv.RequestCount() != n+1 {
		t.Errorf("after midnight: %q (%s), want answered by the model", res.Text, res.FinishReason)
	}
	if u, _ := rig.st.UsageOn(context.Background(), "2025-03-02", "telegram:1"); u.TotalTokens != 70 {
		t.Errorf("the new day's usage = %+v, want 70 tokens", u)
	}
}

func TestBudgetJobsCountAgainstTheDailyTotal(t *testing.T) {
	rig := newBudgetRig(t, usage70(fakellm.Text("report")), BudgetOptions{PerChatDaily: 10, Daily: 100}, testNow, time.UTC)
	ctx := context.Background()
	// The per-chat budget does not apply to a job; the daily one does.
	for i := 0; i < 2; i++ {
		if _, err := rig.h.agent.ProcessDirect(ctx, "job:daily", "report", DirectOptions{JobName: "daily"}); err != nil {
			t.Fatalf("job run %d: %v", i, err)
		}
	}
	n := rig.h.srv.RequestCount()
	_, err := rig.h.agent.ProcessDirect(ctx, "job:daily", "report", DirectOptions{JobName: "daily"})
	var be *BudgetError
	if !errors.As(err, &be) || be.Scope != "daily" {
		t.Fatalf("third job run: %v, want a daily budget refusal", err)
	}
	if rig.h.srv.RequestCount() != n {
		t.Errorf("a refused job made a model request")
	}
	turns, _ := rig.st.SessionTurns(ctx, "job:daily")
	if len(turns) != 2 || turns[0].Job != "daily" {
		t.Errorf("job turns on disk: %d (job %q), want the 2 that ran", len(turns), turns[0].Job)
	}
	// The jobs used the day's tokens: a chat is refused too.
	if res := rig.ask(t, "telegram:1", "hi", false); res.FinishReason != FinishBudget || !strings.HasPrefix(res.Text, "Today's budget") {
		t.Errorf("chat after the jobs: %q (%s)", res.Text, res.FinishReason)
	}
	// The heartbeat is recorded as such.
	rig2 := newBudgetRig(t, usage70(fakellm.Text("hello")), BudgetOptions{}, testNow, time.UTC)
	if _, err := rig2.h.agent.ProcessDirect(ctx, "heartbeat:telegram:1", "greet", DirectOptions{Runtime: Runtime{ChatType: "heartbeat"}}); err != nil {
		t.Fatal(err)
	}
	rows, _ := rig2.st.UsageRows(ctx, memory.UsageFilter{})
	if len(rows) != 1 || rows[0].Job != "heartbeat" || rows[0].Chat != "heartbeat:telegram:1" {
		t.Errorf("heartbeat usage rows %+v", rows)
	}
}

func TestBudgetUnits(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {50000, "50,000"}, {1234567, "1,234,567"}} {
		if got := Thousands(c.n); got != c.want {
			t.Errorf("Thousands(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{0, "1 min"}, {30 * time.Second, "1 min"}, {10 * time.Minute, "10 min"}, {3*time.Hour + 12*time.Minute, "3 h 12 min"},
		{14 * time.Hour, "14 h"}, {59*time.Minute + time.Second, "1 h"}} {
		if got := Until(c.d); got != c.want {
			t.Errorf("Until(%s) = %q, want %q", c.d, got, c.want)
		}
	}
}
