package agent

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
)

// The user message of a turn carries the time its message was accepted
// (Request.Received) when that was before the turn began: the console draws
// the wait in the queue from it. A later or zero Received keeps the turn's
// start.
func TestUserMessageCarriesItsAcceptTime(t *testing.T) {
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	st := openTestStore(t, func() time.Time { return start })
	h := newHarness(t, fakellm.Text("ok"), func(o *Options) {
		o.Sessions, o.Now = st, func() time.Time { return start }
	})
	cases := []struct {
		name     string
		received time.Time
		want     time.Time
	}{
		{"waited 3s", start.Add(-3 * time.Second), start.Add(-3 * time.Second)},
		{"no accept time", time.Time{}, start},
		{"accept time after the start (a clock step)", start.Add(time.Second), start},
	}
	for i, tc := range cases {
		key := "telegram:" + string(rune('1'+i))
		if _, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: key, Text: "hi", Received: tc.received}); err != nil {
			t.Fatal(err)
		}
		turns, err := st.SessionTurns(context.Background(), key)
		if err != nil || len(turns) != 1 {
			t.Fatalf("%s: turns %v, %v", tc.name, turns, err)
		}
		for _, m := range turns[0].Messages {
			if m.Role == memory.RoleUser && !m.Time.Equal(tc.want) {
				t.Errorf("%s: user message time %v, want %v", tc.name, m.Time, tc.want)
			}
		}
	}
}
