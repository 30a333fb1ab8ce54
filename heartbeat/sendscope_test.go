package heartbeat

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
)

// Issue 13, defect 6: send_message is scoped by the running turn alone.
func TestTurnMayReach(t *testing.T) {
	now := time.Date(2025, 6, 2, 12, 0, 0, 0, time.UTC)
	r := newJobsRig(t, now, time.UTC, reportJob()) // deliver_to telegram:1, slack:C0123
	tests := []struct {
		name   string
		ci     agent.CallInfo
		target string
		want   bool
	}{
		{"chat: own chat", agent.CallInfo{SessionKey: "telegram:55"}, "telegram:55", true},
		{"chat: another chat", agent.CallInfo{SessionKey: "telegram:55"}, "telegram:1", false},
		{"chat: own chat's thread is another session", agent.CallInfo{SessionKey: "slack:C1"}, "slack:C1:1700.1", false},
		{"no session", agent.CallInfo{}, "telegram:1", false},
		{"job: deliver_to from the turn", agent.CallInfo{SessionKey: "job:x", JobName: "x", DeliverTo: []string{"discord:9"}}, "discord:9", true},
		{"job: not in the turn's deliver_to", agent.CallInfo{SessionKey: "job:report", JobName: "report", DeliverTo: []string{"discord:9"}}, "telegram:1", false},
		{"job: spec looked up when the turn has none", agent.CallInfo{SessionKey: "job:report", JobName: "report"}, "slack:C0123", true},
		{"job: unknown job", agent.CallInfo{SessionKey: "job:gone", JobName: "gone"}, "telegram:1", false},
	}
	for _, tt := range tests {
		if got := TurnMayReach(context.Background(), r.j, tt.ci, tt.target); got != tt.want {
			t.Errorf("%s: TurnMayReach(%s) = %v, want %v", tt.name, tt.target, got, tt.want)
		}
	}
}

// A job's turn carries its deliver_to in the turn's context; send_message
// refuses everything else with a clear error given to the model.
func TestJobTurnCarriesDeliverTo(t *testing.T) {
	now := time.Date(2025, 6, 2, 12, 0, 0, 0, time.UTC)
	r := newJobsRig(t, now, time.UTC, reportJob())
	send := NewSendMessageTool(r.out, r.sent, nil, nil) // no job lookup: only the turn's context counts
	var refusal error
	r.dir.answer = func(ctx context.Context, c directCall) (string, error) {
		tctx := agent.WithCallInfo(ctx, agent.CallInfo{SessionKey: c.Session, JobName: c.Opts.JobName,
			DeliverTo: c.Opts.DeliverTo, TurnID: "t-job"})
		if _, err := send.Call(tctx, json.RawMessage(`{"target":"slack:C0123","text":"from the job"}`)); err != nil {
			return "", err
		}
		_, refusal = send.Call(tctx, json.RawMessage(`{"target":"telegram:999","text":"leak"}`))
		return "report done", nil
	}
	if _, err := r.j.RunNow(context.Background(), "report"); err != nil {
		t.Fatal(err)
	}
	calls := r.dir.Calls()
	if len(calls) != 1 || !slices.Equal(calls[0].Opts.DeliverTo, []string{"telegram:1", "slack:C0123"}) {
		t.Fatalf("ProcessDirect options %+v", calls)
	}
	var perm *agent.PermanentError
	if refusal == nil || !strings.Contains(refusal.Error(), "not allowed to send to telegram:999") || !errors.As(refusal, &perm) {
		t.Fatalf("refusal: %v", refusal)
	}
	for _, d := range r.out.Sent() {
		if d.Target == "telegram:999" {
			t.Fatalf("delivered outside deliver_to: %+v", d)
		}
	}
}
