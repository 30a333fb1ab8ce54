package ui

import (
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

// A turn whose message waited in the chat's queue draws the wait as the
// first bar, before the turn's own steps; a turn that did not wait has no
// queue bar.
func TestWaterfallShowsTheQueueWait(t *testing.T) {
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	turn := func(userAt time.Time) memory.Turn {
		return memory.Turn{ID: "in-1", Started: start, Ended: start.Add(3 * time.Second), Messages: []memory.Message{
			{Role: memory.RoleUser, Content: "hi", Time: userAt},
			{Role: memory.RoleAssistant, Content: "hello", Time: start.Add(3 * time.Second)},
		}}
	}
	v := turnViewOf(turn(start.Add(-2*time.Second)), NewStats(time.Now))
	if v.Waterfall == nil || len(v.Waterfall.Rows) < 2 {
		t.Fatalf("waterfall %+v, want the queue and the model call", v.Waterfall)
	}
	q, m := v.Waterfall.Rows[0], v.Waterfall.Rows[1]
	if q.Lane != laneQueue || q.Took != 2*time.Second {
		t.Errorf("first bar %s %v, want the queue's 2s", q.Lane, q.Took)
	}
	if v.Waterfall.Total != 5*time.Second {
		t.Errorf("axis %v, want 5s (2s queued + 3s turn)", v.Waterfall.Total)
	}
	if !(q.X < m.X) {
		t.Errorf("the queue bar (x %.1f) is not before the model call (x %.1f)", q.X, m.X)
	}
	if v := turnViewOf(turn(start), NewStats(time.Now)); v.Waterfall != nil && v.Waterfall.Rows[0].Lane == laneQueue {
		t.Error("a turn that did not wait shows a queue bar")
	}
}
