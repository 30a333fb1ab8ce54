package heartbeat

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A model cannot make a chat's reminder fire every second (or never): the
// schedule tool refuses recurring schedules more frequent than
// MinChatJobInterval, and ones that never fire, with an error that says so,
// and stores nothing. Operators' config jobs are not limited.
func TestScheduleToolRefusesFloodingSchedules(t *testing.T) {
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	r := newJobsRig(t, now, time.UTC)
	tool := NewScheduleTool(r.j)
	ctx := chatCtx("telegram:42", "", "")
	for spec, want := range map[string]string{
		"* * * * * *":    "at most once every 5 minutes",
		"@every 1s":      "at most once every 5 minutes",
		"@every 0s":      "at most once every 5 minutes",
		"*/10 * * * * *": "at most once every 5 minutes",
		"* * * * *":      "at most once every 5 minutes",
		"*/2 * * * *":    "at most once every 5 minutes",
		"0,1 9 * * *":    "at most once every 5 minutes",
		"0 9 31 2 *":     "never runs",
	} {
		_, err := tool.Call(ctx, json.RawMessage(`{"action":"create","text":"ping","cron":"`+spec+`"}`))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("cron %q: err = %v, want one containing %q", spec, err, want)
		}
	}
	if recs, _ := r.store.ListJobs(context.Background()); len(recs) != 0 {
		t.Fatalf("refused schedules were stored: %d jobs", len(recs))
	}
	for _, spec := range []string{"*/5 * * * *", "@every 5m", "@every 1h", "0 9 * * 1-5", "@daily"} {
		if _, err := tool.Call(ctx, json.RawMessage(`{"action":"create","text":"ping","cron":"`+spec+`"}`)); err != nil {
			t.Errorf("cron %q refused: %v", spec, err)
		}
	}
}
