package ui

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// usageTurn is a committed turn of chat on day with the given tokens.
func usageTurn(day, persona, job, model string, prompt, completion int) memory.Turn {
	now := time.Now()
	u := memory.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	return memory.Turn{ID: "t-" + day + persona, Day: day, Persona: persona, Job: job, Usage: u, Started: now, Ended: now,
		Models:       []memory.ModelUsage{{Model: model, Usage: u}},
		FinishReason: "final", Answer: "ok", Messages: []memory.Message{{Role: memory.RoleUser, Content: "hi", Time: now}}}
}

// Money per day, chat and model at llm.prices; models without a price are
// marked, not counted as free.
func TestUsageReportMoney(t *testing.T) {
	clk := time.Date(2025, 3, 10, 9, 0, 0, 0, time.UTC)
	cfg := config.Default()
	cfg.Bot.Timezone = "UTC"
	cfg.LLM.Prices = map[string]config.Price{"gpt-4o-mini": {InputPerMTok: 0.15, OutputPerMTok: 0.6}}
	st := openUsageStore(t)
	ctx := context.Background()
	for _, c := range []struct {
		key  string
		turn memory.Turn
	}{
		{"telegram:1", usageTurn("2025-03-10", "assistant", "", "gpt-4o-mini", 1_000_000, 1_000_000)},
		{"telegram:2", usageTurn("2025-03-09", "assistant", "", "unpriced", 500, 500)},
		{"telegram:3", usageTurn("2025-01-01", "assistant", "", "gpt-4o-mini", 7, 7)}, // out of range
	} {
		if err := st.AppendTurn(ctx, c.key, c.turn); err != nil {
			t.Fatal(err)
		}
	}
	d, err := usageReport(httptest.NewRequest("GET", "/ui/usage", nil), st, cfg, clk, 7)
	if err != nil {
		t.Fatal(err)
	}
	if d.From != "2025-03-04" || d.To != "2025-03-10" || len(d.PerDay) != 7 || !d.Priced {
		t.Fatalf("range %s..%s (%d days), priced %v", d.From, d.To, len(d.PerDay), d.Priced)
	}
	if d.Today.Tokens() != 2_000_000 || money(d.Today.Money) != "0.75" || d.Today.Unpriced {
		t.Errorf("today %+v", d.Today)
	}
	if d.Total.Tokens() != 2_001_000 || !d.Total.Unpriced || money(d.Total.Money) != "0.75" {
		t.Errorf("total %+v", d.Total)
	}
	if len(d.Chats) != 2 || d.Chats[0].Name != "telegram:1" || d.Chats[1].Name != "telegram:2" || !d.Chats[1].Unpriced {
		t.Errorf("chats %+v", d.Chats)
	}
	if len(d.Models) != 2 || d.Models[1].Name != "unpriced" || !d.Models[1].Unpriced {
		t.Errorf("models %+v", d.Models)
	}
}

func openUsageStore(t *testing.T) memory.Store {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "switchboard.db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
