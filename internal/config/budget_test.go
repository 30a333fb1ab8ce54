package config

import (
	"strings"
	"testing"
)

// llm.budget and llm.prices load, and bad values are refused naming the key.
func TestBudgetAndPrices(t *testing.T) {
	c := mustParse(t, `llm:
  budget: {per_chat_daily_tokens: 50000, daily_tokens: 1000000, admins: true}
  prices:
    gpt-4o-mini: {input_per_mtok: 0.15, output_per_mtok: 0.6}
`, envOf(nil))
	b := c.LLM.Budget
	if b.PerChatDailyTokens != 50000 || b.DailyTokens != 1000000 || !b.Admins {
		t.Errorf("budget %+v", b)
	}
	p := c.LLM.Prices["gpt-4o-mini"]
	if got := p.Cost(1_000_000, 500_000); got != 0.45 {
		t.Errorf("cost of 1M in + 0.5M out = %v, want 0.45", got)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"llm:\n  budget: {per_chat_daily_tokens: -1}\n", "llm.budget.per_chat_daily_tokens: must be 0 (unlimited) or more"},
		{"llm:\n  budget: {daily_tokens: -5}\n", "llm.budget.daily_tokens: must be 0 (unlimited) or more"},
		{"llm:\n  prices: {m: {input_per_mtok: -1}}\n", "llm.prices.m.input_per_mtok: must be a price of 0 or more"},
		{"llm:\n  budget: {per_chat: 5}\n", "per_chat"},
	} {
		if got := parseErr(t, tc.yaml, envOf(nil)); !strings.Contains(got, tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, got, tc.want)
		}
	}
}
