package agent

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// lockstep makes two sessions' model calls alternate: a session's n-th call
// waits until the other made its n-th call too (or its turn ended).
type lockstep struct {
	mu    sync.Mutex
	cond  *sync.Cond
	calls map[string]int
	ended map[string]bool
}

func newLockstep() *lockstep {
	l := &lockstep{calls: map[string]int{}, ended: map[string]bool{}}
	l.cond = sync.NewCond(&l.mu)
	return l
}

func (l *lockstep) call(me, other string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls[me]++
	l.cond.Broadcast()
	for l.calls[other] < l.calls[me] && !l.ended[other] {
		l.cond.Wait()
	}
}

func (l *lockstep) end(me string) {
	l.mu.Lock()
	l.ended[me] = true
	l.cond.Broadcast()
	l.mu.Unlock()
}

// Two chats whose turns run at the same time cannot each spend the whole
// daily budget: a turn's model calls count what the other running turns
// have used so far, not only what is committed. The overshoot is at most
// the call each turn had in flight when the budget was crossed.
func TestDailyBudgetCountsRunningTurns(t *testing.T) {
	const steps = 10 // tool steps per turn, then the answer: 11 calls of 70 tokens
	var plan [][]fakellm.ToolCall
	for i := 0; i < steps; i++ { // different arguments: no repeated call
		plan = append(plan, []fakellm.ToolCall{call("lookup", fmt.Sprintf(`{"n":%d}`, i))})
	}
	next := toolsThenAnswer("done", plan...)
	ls := newLockstep()
	other := map[string]string{"telegram:1": "telegram:2", "telegram:2": "telegram:1"}
	rig := newBudgetRig(t, usage70(func(r *fakellm.Request) fakellm.Response {
		me := fakellm.StripRuntimeContext(r.LastUserText())
		if _, ok := other[me]; !ok { // a later step: the first user message names the chat
			for _, m := range r.Body.Messages {
				if m.Role == "user" {
					me = fakellm.StripRuntimeContext(m.Content)
					break
				}
			}
		}
		ls.call(me, other[me])
		return next(r)
	}), BudgetOptions{Daily: 1000}, time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), time.UTC, constTool("lookup", "found"))
	var wg sync.WaitGroup
	for key := range other {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer ls.end(key)
			if _, err := rig.h.agent.ProcessMessage(context.Background(), Request{SessionKey: key, Text: key}); err != nil {
				t.Errorf("turn of %s: %v", key, err)
			}
		}()
	}
	wg.Wait()
	all, err := rig.st.UsageOn(context.Background(), "2025-03-01", "")
	if err != nil {
		t.Fatal(err)
	}
	if limit := int64(1000 + 2*70); int64(all.TotalTokens) > limit {
		t.Fatalf("two concurrent turns used %d tokens of a daily budget of 1000 (want at most %d: one crossing call each)", all.TotalTokens, limit)
	}
}
