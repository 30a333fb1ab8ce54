package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

// usageTurn is a one-message turn on day using the given model usage.
func usageTurn(id, day, persona, job string, ended time.Time, models ...memory.ModelUsage) memory.Turn {
	var sum memory.Usage
	for _, m := range models {
		sum = sum.Add(m.Usage)
	}
	return memory.Turn{ID: id, Day: day, Persona: persona, Job: job, Models: models, Usage: sum,
		Started: ended.Add(-time.Second), Ended: ended, FinishReason: "final", Answer: "ok",
		Messages: []memory.Message{{Role: memory.RoleUser, Content: "hi", Time: ended},
			{Role: memory.RoleAssistant, Content: "ok", Time: ended}}}
}

func tok(p, c int) memory.Usage {
	return memory.Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}
}

// testUsageBook: every turn's tokens land in the usage book in the turn's own
// commit (AppendTurn and CommitTurn alike), per day, chat, persona, job and
// model; the day's and a chat's totals read back at once, ranges select rows,
// the turn keeps its persona, job and per-model split, and a reopen keeps it
// all.
func (h harness) testUsageBook(t *testing.T) {
	ctx := context.Background()
	s, clk, dir := h.openTest(t)
	now := clk.Now()
	alice, bob, job := "telegram:1", "telegram:1:2", "job:daily"
	mini := func(u memory.Usage) memory.ModelUsage {
		return memory.ModelUsage{Model: "gpt-4o-mini", Endpoint: "primary", Usage: u}
	}
	llama := func(u memory.Usage) memory.ModelUsage {
		return memory.ModelUsage{Model: "llama3", Endpoint: "fallback 1", Usage: u}
	}
	mustNo(t, s.AppendTurn(ctx, alice, usageTurn("a1", "2025-03-01", "assistant", "", now, mini(tok(100, 20)))))
	// A failover turn: two models; the same model twice is summed.
	mustNo(t, s.AppendTurn(ctx, alice, usageTurn("a2", "2025-03-01", "pirate", "", now,
		mini(tok(10, 0)), llama(tok(30, 5)), mini(tok(1, 1)))))
	// bob is a thread of alice's chat: a key with alice's as prefix stays apart.
	_, err := s.CommitTurn(ctx, bob, memory.TurnCommit{Turn: ptr(usageTurn("b1", "2025-03-01", "assistant", "", now, mini(tok(7, 3))))})
	mustNo(t, err)
	mustNo(t, s.AppendTurn(ctx, job, usageTurn("j1", "2025-03-01", "reporter", "daily", now, mini(tok(50, 50)))))
	// The next day in the bot's timezone.
	mustNo(t, s.AppendTurn(ctx, alice, usageTurn("a3", "2025-03-02", "assistant", "", now.Add(time.Hour), mini(tok(5, 5)))))
	// No Day: the UTC day of Ended.
	mustNo(t, s.AppendTurn(ctx, alice, usageTurn("a4", "", "assistant", "", time.Date(2025, 3, 3, 23, 30, 0, 0, time.UTC), mini(tok(2, 2)))))
	// A turn that used no tokens (a refusal) adds no row.
	mustNo(t, s.AppendTurn(ctx, alice, usageTurn("a5", "2025-03-03", "assistant", "", now)))

	check := func(s memory.Store) {
		t.Helper()
		on := []struct {
			day, chat string
			want      memory.Usage
		}{
			{"2025-03-01", "", tok(100+10+30+1+7+50, 20+5+1+3+50)},
			{"2025-03-01", alice, tok(141, 26)},
			{"2025-03-01", bob, tok(7, 3)},
			{"2025-03-01", job, tok(50, 50)},
			{"2025-03-02", "", tok(5, 5)},
			{"2025-03-02", bob, memory.Usage{}},
			{"2025-03-03", alice, tok(2, 2)},
			{"2025-02-28", "", memory.Usage{}},
		}
		for _, c := range on {
			got, err := s.UsageOn(ctx, c.day, c.chat)
			mustNo(t, err)
			if got != c.want {
				t.Errorf("UsageOn(%s, %q) = %+v, want %+v", c.day, c.chat, got, c.want)
			}
		}
		row := func(day, chat, persona, job, model string, p, c int64) memory.UsageRow {
			return memory.UsageRow{Day: day, Chat: chat, Persona: persona, Job: job, Model: model, PromptTokens: p, CompletionTokens: c}
		}
		day1 := []memory.UsageRow{
			row("2025-03-01", job, "reporter", "daily", "gpt-4o-mini", 50, 50),
			row("2025-03-01", alice, "assistant", "", "gpt-4o-mini", 100, 20),
			row("2025-03-01", alice, "pirate", "", "gpt-4o-mini", 11, 1),
			row("2025-03-01", alice, "pirate", "", "llama3", 30, 5),
			row("2025-03-01", bob, "assistant", "", "gpt-4o-mini", 7, 3),
		}
		rows := []struct {
			f    memory.UsageFilter
			want []memory.UsageRow
		}{
			{memory.UsageFilter{From: "2025-03-01", To: "2025-03-01"}, day1},
			{memory.UsageFilter{From: "2025-03-02", Chat: alice}, []memory.UsageRow{
				row("2025-03-02", alice, "assistant", "", "gpt-4o-mini", 5, 5),
				row("2025-03-03", alice, "assistant", "", "gpt-4o-mini", 2, 2)}},
			{memory.UsageFilter{To: "2025-03-01", Chat: bob}, day1[4:]},
			{memory.UsageFilter{From: "2025-03-04"}, nil},
		}
		for _, c := range rows {
			got, err := s.UsageRows(ctx, c.f)
			mustNo(t, err)
			if len(got) == 0 && len(c.want) == 0 {
				continue
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("UsageRows(%+v) =\n%+v\nwant\n%+v", c.f, got, c.want)
			}
		}
		turns, err := s.SessionTurns(ctx, alice)
		mustNo(t, err)
		if len(turns) != 5 {
			t.Fatalf("turns of %s = %d, want 5", alice, len(turns))
		}
		a2 := turns[1]
		if a2.Persona != "pirate" || a2.Job != "" || len(a2.Models) != 3 || a2.Models[1].Model != "llama3" ||
			a2.Models[1].Endpoint != "fallback 1" || a2.Models[1].Usage != tok(30, 5) {
			t.Errorf("turn a2 read back as persona %q job %q models %+v", a2.Persona, a2.Job, a2.Models)
		}
		jt, err := s.SessionTurns(ctx, job)
		mustNo(t, err)
		if len(jt) != 1 || jt[0].Job != "daily" || jt[0].Persona != "reporter" {
			t.Errorf("job turn read back as %+v", jt)
		}
	}
	check(s)
	mustNo(t, s.Close())
	check(h.openAt(t, dir, TestOptions(clk)))
}

func ptr[T any](v T) *T { return &v }
