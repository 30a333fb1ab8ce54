package ui

import (
	"errors"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/memory"
)

// Issue 34, item 5: Backfill counts the store's turns of the last day that
// ended before the stats began — not this process's (the hub reported
// those), not older ones — once, and tries again after a failed read.
func TestBackfillCountsEarlierTurnsOnce(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := start
	st := NewStats(func() time.Time { return now })
	now = start.Add(10 * time.Minute)
	st.TurnDone("web", agent.Result{TurnID: "live"}, nil, time.Second) // this process's
	turn := func(id string, ended time.Time, finish string) memory.Turn {
		return memory.Turn{ID: id, Started: ended.Add(-2 * time.Second), Ended: ended, FinishReason: finish}
	}
	stored := []memory.Turn{
		turn("old-1", start.Add(-30*time.Minute), "final"),
		turn("old-2", start.Add(-31*time.Minute), "api_error"),
		turn("live", now, "final"),                         // also reported by the hub
		turn("ancient", start.Add(-25*time.Hour), "final"), // beyond the day
		{ID: "unfinished", Started: start.Add(-time.Minute)},
	}
	if err := st.Backfill(func(time.Time) ([]memory.Turn, error) { return nil, errors.New("disk on fire") }); err == nil {
		t.Fatal("a failed read reported no error")
	}
	for range 2 {
		if err := st.Backfill(func(since time.Time) ([]memory.Turn, error) {
			if want := now.Add(-24 * time.Hour); !since.Equal(want) {
				t.Errorf("since = %s, want %s", since, want)
			}
			return stored, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	turns, errs := 0, 0
	var maxLat time.Duration
	for _, p := range st.Series(60, 1) {
		turns += p.Turns
		errs += p.Errors
		maxLat = max(maxLat, p.MaxLat)
	}
	if turns != 3 || errs != 1 || maxLat != 2*time.Second {
		t.Errorf("the last hour has %d turns, %d errors, max latency %s; want 3 (two earlier, one live), 1, 2s", turns, errs, maxLat)
	}
}
