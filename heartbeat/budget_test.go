package heartbeat

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
)

// A task refused by llm.budget is recorded as skipped with the reason,
// delivers nothing and is no failure (no alert, however often).
func TestTaskRefusedByBudgetIsSkipped(t *testing.T) {
	now := time.Date(2025, 6, 2, 12, 0, 0, 0, time.UTC)
	r := newJobsRig(t, now, time.UTC, reportJob())
	const reason = "Today's budget of 1,000 tokens is used up; I can answer again at 00:00 UTC (in 12 h)."
	r.dir.answer = func(context.Context, directCall) (string, error) {
		return "", fmt.Errorf("agent: %w", &agent.BudgetError{Scope: "daily", Message: reason})
	}
	for i := range 5 {
		run, err := r.j.RunNow(context.Background(), "report")
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != RunSkipped || !strings.Contains(run.Error, reason) || len(r.out.Sent()) != 0 {
			t.Fatalf("run %d: %+v, sent %+v; want skipped with the budget's reason", i, run, r.out.Sent())
		}
	}
	if a := r.Alerts(); len(a) != 0 {
		t.Errorf("alerts %v, want none for budget skips", a)
	}
}
