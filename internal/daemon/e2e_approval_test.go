package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/heartbeat"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
	"github.com/switchboard-bot/switchboard/memory"
)

// callsCurrentTime asks for current_time once, then answers with its result.
func callsCurrentTime(req *fakellm.Request) fakellm.Response {
	if res := req.ToolResults(); len(res) > 0 && (req.LastMessage().Role == "tool" || !req.HasTools()) {
		return fakellm.Response{Content: "answer: " + res[len(res)-1].Content}
	}
	return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "current_time", Arguments: `{}`}}}
}

func auditActions(t *testing.T, r *rig, session string) []string {
	t.Helper()
	recs, err := r.d.Store().ListAudit(context.Background(), memory.AuditFilter{Session: session})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(recs) - 1; i >= 0; i-- { // oldest first
		if strings.HasPrefix(recs[i].Action, "approval.") {
			out = append(out, recs[i].Action+" by "+recs[i].Actor)
		}
	}
	return out
}

// Issue 16 end to end: agent.require_approval reaches the agent and
// agent.approval_timeout the handler: on Telegram the call waits, /approve
// runs it, and a call nobody approves is refused after the timeout.
func TestApprovalInChatE2E(t *testing.T) {
	llm := fakellm.Start(t, callsCurrentTime)
	tg := faketelegram.New(t, faketelegram.Options{})
	cfg := telegramConfig(t, llm, tg)
	cfg.Agent.RequireApproval = []string{"current_*"}
	cfg.Agent.ApprovalTimeout = 200 * time.Millisecond
	r := startDaemon(t, cfg, tg.Token())

	tg.UserSays(tgUser, "what time is it?")
	// The request may be followed by the refusal before this poll looks
	// (200 ms on a loaded machine): the first message is the request.
	eventually(t, "the approval request", func() bool {
		s := tg.Sent(tgUser)
		return len(s) >= 1 && strings.Contains(s[0].Plain, "Approval needed") && strings.Contains(s[0].Plain, "current_time")
	})
	eventually(t, "the refusal after the timeout", func() bool {
		s := tg.Sent(tgUser)
		return len(s) == 2 && strings.Contains(s[1].Plain, "nobody approved current_time within 200ms")
	})

	r.d.Handler().SetApprovalTimeout(time.Minute)
	tg.UserSays(tgUser, "try again")
	eventually(t, "the second approval request", func() bool { return len(tg.Sent(tgUser)) == 3 })
	tg.UserSays(tgUser, "/approve")
	eventually(t, "the answer with the tool's result", func() bool {
		return slices.ContainsFunc(tg.Sent(tgUser), func(m faketelegram.SentMessage) bool {
			return strings.HasPrefix(m.Plain, "answer:") && !strings.Contains(m.Plain, "not run")
		})
	})
	key := fmt.Sprintf("telegram:%d", tgUser)
	user := fmt.Sprintf("telegram:user:%d", tgUser)
	want := []string{"approval.request by " + user, "approval.timeout by system",
		"approval.request by " + user, "approval.approve by " + user}
	if got := auditActions(t, r, key); !slices.Equal(got, want) {
		t.Fatalf("audit = %v, want %v", got, want)
	}
}

// A config job's call of a tool that needs approval is denied without
// waiting, unless jobs[].approve lists it.
func TestJobApprovalE2E(t *testing.T) {
	for _, tt := range []struct {
		name     string
		approve  []string
		wantText string
		wantRec  string
	}{
		{"denied", nil, "nobody can approve it in this job", "approval.deny by job:clock"},
		{"approved by the job", []string{"current_time"}, "UTC", "approval.preapproved by job:clock"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			llm := fakellm.Start(t, callsCurrentTime)
			tg := faketelegram.New(t, faketelegram.Options{})
			cfg := telegramConfig(t, llm, tg)
			cfg.Agent.RequireApproval = []string{"current_time"}
			cfg.Jobs = []config.Job{{Name: "clock", Kind: "task", Schedule: "0 9 * * *", Prompt: "tell the time",
				DeliverTo: []string{fmt.Sprintf("telegram:%d", tgUser)}, Approve: tt.approve}}
			r := startDaemon(t, cfg, tg.Token())
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			// The scheduler's start-up pass may hold the job for a moment.
			var err error
			eventually(t, "the job to run", func() bool {
				_, err = r.d.JobAction(ctx, "run", "clock")
				return !errors.Is(err, heartbeat.ErrJobRunning)
			})
			if err != nil {
				t.Fatal(err)
			}
			// The model got the decision as the tool's result (the fake chat
			// cannot take the job's delivery: nobody wrote to the bot).
			res := llm.LastRequest().ToolResults()
			if len(res) != 1 || !strings.Contains(res[0].Content, tt.wantText) {
				t.Fatalf("tool results %+v, want one containing %q", res, tt.wantText)
			}
			if got := auditActions(t, r, "job:clock"); !slices.Equal(got, []string{tt.wantRec}) {
				t.Fatalf("audit = %v, want [%s]", got, tt.wantRec)
			}
		})
	}
}
