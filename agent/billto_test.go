package agent

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// A background task runs on its own session ("<chat>#task:t1") but is the
// chat's work: its tokens count against the chat's per-chat budget and show
// in the chat's usage, so spawning tasks is no way around the budget.
func TestDirectTurnBilledToItsChat(t *testing.T) {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	rig := newBudgetRig(t, usage70(fakellm.Text("done")), BudgetOptions{PerChatDaily: 100}, start, time.UTC)
	ctx := context.Background()
	task := DirectOptions{JobName: "task:t1", BillTo: "telegram:1"}
	if _, err := rig.h.agent.ProcessDirect(ctx, "telegram:1#task:t1", "work", task); err != nil {
		t.Fatalf("first task turn: %v", err)
	}
	if u, _ := rig.st.UsageOn(ctx, "2025-03-01", "telegram:1"); u.TotalTokens != 70 {
		t.Errorf("the chat's usage after its task = %d tokens, want 70", u.TotalTokens)
	}
	if _, err := rig.h.agent.ProcessDirect(ctx, "telegram:1#task:t1", "more", task); err != nil {
		t.Fatalf("second task turn (70 < 100): %v", err)
	}
	before := rig.h.srv.RequestCount()
	if _, err := rig.h.agent.ProcessDirect(ctx, "telegram:1#task:t2", "again", DirectOptions{JobName: "task:t2", BillTo: "telegram:1"}); !IsBudget(err) {
		t.Errorf("a task of a chat over its budget: err = %v, want a budget refusal", err)
	}
	if rig.h.srv.RequestCount() != before {
		t.Errorf("a model request was made for a chat over its budget")
	}
	if res := rig.ask(t, "telegram:1", "hi", false); res.FinishReason != FinishBudget {
		t.Errorf("the chat itself after its tasks used its budget: finish %s, want budget", res.FinishReason)
	}
}

// A task's token budget bounds its own turn.
func TestDirectTurnTokenBudget(t *testing.T) {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tool := constTool("lookup", "found it")
	steps := []fakellm.ToolCall{call("lookup", `{}`)}
	rig := newBudgetRig(t, usage70(toolsThenAnswer("done", steps, steps, steps)), BudgetOptions{}, start, time.UTC, tool)
	_, _ = rig.h.agent.ProcessDirect(context.Background(), "telegram:1#task:t1", "go", DirectOptions{JobName: "task:t1", TokenBudget: 100})
	if n := rig.h.srv.RequestCount(); n > 3 {
		t.Errorf("a task with a 100-token budget made %d model requests of 70 tokens each (want the crossing one, then one closing call at most)", n)
	}
}
