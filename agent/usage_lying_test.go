package agent

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// A model server that reports nonsense usage (negative counts, 2^62
// tokens, an all-zero usage object) cannot lift a budget nor corrupt the
// usage book: negative or all-zero usage is estimated like a missing one,
// an absurd count is capped (and so uses the budget up), and the book never
// holds a negative or overflowed number.
func TestLyingUsageKeepsTheBudget(t *testing.T) {
	const huge = 1 << 62
	for _, tt := range []struct {
		name        string
		usage       fakellm.Usage
		wantRefused bool // the chat's next message is refused (budget 1000)
	}{
		{name: "negative prompt tokens", usage: fakellm.Usage{PromptTokens: -1_000_000_000, CompletionTokens: 5}},
		{name: "negative completion tokens", usage: fakellm.Usage{PromptTokens: 5, CompletionTokens: -7}},
		{name: "all zero", usage: fakellm.Usage{}},
		{name: "2^62 each", usage: fakellm.Usage{PromptTokens: huge, CompletionTokens: huge}, wantRefused: true},
		{name: "2^62 prompt", usage: fakellm.Usage{PromptTokens: huge}, wantRefused: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			rig := newBudgetRig(t, func(r *fakellm.Request) fakellm.Response {
				u := tt.usage
				return fakellm.Response{Content: "an answer of a few words", Usage: &u}
			}, BudgetOptions{PerChatDaily: 1000}, start, time.UTC)
			// Twice: a book that sums two lies must not overflow either.
			rig.ask(t, "telegram:1", "first", true)
			rig.ask(t, "telegram:1", "second", true)
			u, err := rig.st.UsageOn(context.Background(), "2025-03-01", "telegram:1")
			if err != nil {
				t.Fatal(err)
			}
			if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.TotalTokens <= 0 {
				t.Fatalf("usage book after two turns: %+v, want positive counts", u)
			}
			res := rig.ask(t, "telegram:1", "third", false)
			if refused := res.FinishReason == FinishBudget; refused != tt.wantRefused {
				t.Fatalf("third turn: %q (%s), refused=%v, want %v (book %+v)", res.Text, res.FinishReason, refused, tt.wantRefused, u)
			}
			all, _ := rig.st.UsageOn(context.Background(), "2025-03-01", "")
			if all.PromptTokens < 0 || all.CompletionTokens < 0 || all.TotalTokens < 0 {
				t.Fatalf("the day's total went negative: %+v", all)
			}
		})
	}
}
