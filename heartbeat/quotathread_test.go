package heartbeat

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The per-chat job quota counts a chat's threads together: opening a new
// Slack thread (or Telegram topic, Discord thread) for every 50 reminders
// does not get a fresh quota.
func TestScheduleToolQuotaCoversThreads(t *testing.T) {
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	r := newJobsRig(t, now, time.UTC)
	tool := NewScheduleTool(r.j)
	for i := range MaxJobsPerChat {
		ctx := chatCtx(fmt.Sprintf("slack:C0123:1700000000.%06d", i%5), "", "")
		if _, err := tool.Call(ctx, json.RawMessage(fmt.Sprintf(`{"action":"create","text":"r%d","in":"1h"}`, i))); err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
	}
	for _, key := range []string{"slack:C0123:1700000999.000001", "slack:C0123"} {
		_, err := tool.Call(chatCtx(key, "", ""), json.RawMessage(`{"action":"create","text":"one more","in":"1h"}`))
		if err == nil || !strings.Contains(err.Error(), "too many jobs for this chat") {
			t.Errorf("%s: err = %v, want the chat's quota to be used up", key, err)
		}
	}
	if _, err := tool.Call(chatCtx("slack:C0999:1700000000.000001", "", ""), json.RawMessage(`{"action":"create","text":"elsewhere","in":"1h"}`)); err != nil {
		t.Errorf("another chat: %v", err)
	}
}
