package heartbeat

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/heartbeat/schedule"
)

// Issue 27: a one-shot for the year 9999 (or "in 100000 weeks") is not
// stored: the schedule tool refuses a one-shot more than
// schedule.MaxOneShotYears ahead with an error the model can relay, and
// Jobs.Create (the web console's path) refuses it too. Up to the bound is
// accepted.
func TestScheduleToolRefusesFarFutureOneShot(t *testing.T) {
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	r := newJobsRig(t, now, time.UTC)
	tool := NewScheduleTool(r.j)
	ctx := chatCtx("telegram:42", "", "")
	for _, tt := range []struct{ args, want string }{
		{`{"action":"create","text":"party","at":"9999-12-31T23:59:00Z"}`,
			"schedule: at 9999-12-31T23:59:00Z is more than 5 years ahead: a one-shot job may be at most 5 years in the future (until 2030-06-01 10:00 UTC)"},
		{`{"action":"create","text":"party","at":"2030-06-01 10:01"}`, "is more than 5 years ahead"},
		{`{"action":"create","text":"party","in":"300 weeks"}`,
			"schedule: in: \"300 weeks\" is more than 5 years ahead: a one-shot job may be at most 5 years in the future (until 2030-06-01 10:00 UTC)"},
		{`{"action":"create","text":"party","in":"9999999h"}`, "is more than 5 years ahead"},
		// Each term overflows time.Duration; two of them once summed to a small positive delay.
		{`{"action":"create","text":"party","in":"10000000000000000000s 10000000000000000000s 5m"}`, "is more than 5 years ahead"},
	} {
		_, err := tool.Call(ctx, json.RawMessage(tt.args))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Call(%s) = %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
	if recs, _ := r.store.ListJobs(context.Background()); len(recs) != 0 {
		t.Fatalf("far-future one-shots were stored: %d jobs", len(recs))
	}

	far := JobSpec{Name: "far", Kind: KindReminder, Text: "x", At: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC),
		DeliverTo: []string{"telegram:42"}}
	if err := r.j.Create(context.Background(), far); err == nil || !strings.Contains(err.Error(), "is more than 5 years ahead") {
		t.Fatalf("Jobs.Create(year 9999) = %v, want refused", err)
	}

	for _, args := range []string{
		`{"action":"create","text":"passport","at":"2030-06-01 10:00"}`,
		`{"action":"create","text":"warranty","in":"104 weeks"}`,
	} {
		if _, err := tool.Call(ctx, json.RawMessage(args)); err != nil {
			t.Fatalf("Call(%s) = %v, want accepted (within %d years)", args, err, schedule.MaxOneShotYears)
		}
	}
	if !strings.Contains(tool.Description(), "at most 5 years ahead") {
		t.Errorf("description does not state the bound: %s", tool.Description())
	}
}
