package heartbeat

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A model cannot store a giant reminder or task prompt for a chat: the
// schedule tool refuses a text or prompt over MaxChatJobText characters
// with an error that says so (a reminder is one message, not eight chunks
// ending in "answer truncated" at every run).
func TestScheduleToolRefusesHugeText(t *testing.T) {
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	r := newJobsRig(t, now, time.UTC)
	tool := NewScheduleTool(r.j)
	ctx := chatCtx("telegram:42", "", "")
	huge := strings.Repeat("ä", MaxChatJobText+1)
	for _, args := range []string{
		`{"action":"create","text":"` + huge + `","in":"1h"}`,
		`{"action":"create","prompt":"` + huge + `","cron":"0 9 * * *"}`,
	} {
		_, err := tool.Call(ctx, json.RawMessage(args))
		if err == nil || !strings.Contains(err.Error(), "at most 4000 characters") {
			t.Errorf("err = %v, want a refusal naming the limit", err)
		}
	}
	if recs, _ := r.store.ListJobs(context.Background()); len(recs) != 0 {
		t.Fatalf("huge texts were stored: %d jobs", len(recs))
	}
	ok := strings.Repeat("ä", MaxChatJobText)
	if _, err := tool.Call(ctx, json.RawMessage(`{"action":"create","text":"`+ok+`","in":"1h"}`)); err != nil {
		t.Fatalf("a text of exactly the limit: %v", err)
	}
}
