package heartbeat

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
)

func chatCtx(session, persona, job string) context.Context {
	return agent.WithCallInfo(context.Background(), agent.CallInfo{SessionKey: session, Persona: persona, JobName: job, TurnID: "turn-" + session})
}

func TestToolsRegisterWithAgentRegistry(t *testing.T) {
	r := newJobsRig(t, time.Now(), time.UTC)
	reg := agent.NewRegistry()
	if err := reg.Register(NewScheduleTool(r.j)); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(NewSendMessageTool(r.out, r.sent, r.j, nil)); err != nil {
		t.Fatal(err)
	}
}

func TestScheduleToolCreateListCancel(t *testing.T) {
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	r := newJobsRig(t, now, time.UTC, dailyReminder(MisfireSkip))
	tool := NewScheduleTool(r.j)
	call := func(ctx context.Context, args string) (string, error) { return tool.Call(ctx, json.RawMessage(args)) }
	alice, bob := chatCtx("telegram:1", "buddy", ""), chatCtx("discord:2", "assistant", "")

	res, err := call(alice, `{"action":"create","name":"Morning News","prompt":"Give me three headlines","cron":"0 7 * * *","timezone":"Europe/Berlin"}`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res, `"morning-news"`) || !strings.Contains(res, "Mon 2025-06-02 07:00 CEST") {
		t.Errorf("create result %q", res)
	}
	info, err := r.j.Get(context.Background(), "morning-news")
	if err != nil {
		t.Fatal(err)
	}
	if info.Spec.Kind != KindTask || info.Spec.Persona != "buddy" || info.Spec.CreatedBy != "telegram:1" || info.Source != SourceChat {
		t.Errorf("spec %+v", info)
	}
	if _, err := call(bob, `{"action":"create","text":"stretch","at":"2025-06-01 12:30"}`); err != nil {
		t.Fatal(err)
	}

	list, err := call(alice, `{"action":"list"}`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(list, "morning-news") || strings.Contains(list, "stretch") || !strings.Contains(list, "daily") ||
		!strings.Contains(list, "config.yaml; cannot be cancelled") {
		t.Errorf("alice's list should show her job and the config job delivering to her chat, not bob's:\n%s", list)
	}
	if list, _ := call(bob, `{"action":"list"}`); !strings.Contains(list, "stretch") || strings.Contains(list, "daily") || strings.Contains(list, "morning-news") {
		t.Errorf("bob's list:\n%s", list)
	}
	if _, err := call(bob, `{"action":"cancel","name":"morning-news"}`); !errors.Is(err, ErrNoSuchJob) {
		t.Fatalf("bob cancelled alice's job: %v", err)
	}
	if _, err := call(alice, `{"action":"cancel","name":"daily"}`); !errors.Is(err, ErrConfigJob) {
		t.Fatalf("cancel a config job: %v", err)
	}
	if res, err := call(alice, `{"action":"cancel","name":"morning-news"}`); err != nil || !strings.Contains(res, "Cancelled") {
		t.Fatalf("cancel: %q %v", res, err)
	}
	if list, _ := call(alice, `{"action":"list"}`); strings.Contains(list, "morning-news") {
		t.Errorf("list after cancel: %s", list)
	}
}

func TestScheduleToolRefusals(t *testing.T) {
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	r := newJobsRig(t, now, time.UTC)
	tool := NewScheduleTool(r.j)
	cases := []struct {
		name string
		ctx  context.Context
		args string
		want string
	}{
		{"inside a job", chatCtx("job:report", "reporter", "report"), `{"action":"create","text":"x","in":"5m"}`, "cannot create jobs"},
		{"no chat", context.Background(), `{"action":"create","text":"x","in":"5m"}`, "no chat"},
		{"cli session", chatCtx("cli:local", "", ""), `{"action":"create","text":"x","in":"5m"}`, "cannot receive"},
		{"two times", chatCtx("telegram:1", "", ""), `{"action":"create","text":"x","in":"5m","cron":"@every 1h"}`, "exactly one"},
		{"past", chatCtx("telegram:1", "", ""), `{"action":"create","text":"x","at":"2025-06-01T09:00:00Z"}`, "in the past"},
		{"bad cron", chatCtx("telegram:1", "", ""), `{"action":"create","text":"x","cron":"every tuesday"}`, "cron"},
		{"bad zone", chatCtx("telegram:1", "", ""), `{"action":"create","text":"x","in":"5m","timezone":"Moon/Base"}`, "time zone"},
		{"no text", chatCtx("telegram:1", "", ""), `{"action":"create","in":"5m"}`, "needs text"},
		{"cancel without name", chatCtx("telegram:1", "", ""), `{"action":"cancel"}`, "needs the job's name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tool.Call(tc.ctx, json.RawMessage(tc.args))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := tool.Call(chatCtx("telegram:1", "", ""), json.RawMessage(`{"action":"list"}`)); err != nil {
		t.Fatal(err)
	}
	if list, _ := tool.Call(chatCtx("telegram:1", "", ""), json.RawMessage(`{"action":"list"}`)); !strings.Contains(list, "No jobs") {
		t.Errorf("list of a chat without jobs: %s", list)
	}
	if recs, _ := r.store.ListJobs(context.Background()); len(recs) != 0 {
		t.Fatalf("refused calls stored jobs: %+v", recs)
	}
}

func TestSendMessageAllowlistAndDedupWithFinalAnswer(t *testing.T) {
	now := time.Date(2025, 6, 2, 12, 0, 0, 0, time.UTC)
	r := newJobsRig(t, now, time.UTC, reportJob())
	send := NewSendMessageTool(r.out, r.sent, r.j, nil)
	const report = "Weekly numbers: 12 signups."
	// The task posts its report to telegram:1 itself, then answers the same text.
	r.dir.answer = func(ctx context.Context, c directCall) (string, error) {
		tctx := agent.WithCallInfo(ctx, agent.CallInfo{SessionKey: c.Session, JobName: c.Opts.JobName, TurnID: "t-report"})
		if _, err := send.Call(tctx, json.RawMessage(`{"target":"telegram:1","text":"`+report+`"}`)); err != nil {
			return "", err
		}
		if _, err := send.Call(tctx, json.RawMessage(`{"target":"discord:999","text":"leak"}`)); err == nil {
			return "", errors.New("send_message reached a target outside deliver_to")
		}
		return report + "\n", nil
	}
	run, err := r.j.RunNow(context.Background(), "report")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != RunOK {
		t.Fatalf("run %+v", run)
	}
	var to = map[string]int{}
	for _, d := range r.out.Sent() {
		to[d.Target]++
	}
	if to["telegram:1"] != 1 || to["slack:C0123"] != 1 || to["discord:999"] != 0 {
		t.Fatalf("deliveries per target %v; the final answer must not repeat the send_message", to)
	}
	if run.Deliveries[0].Status != DeliveryDelivered || run.Deliveries[0].PlatformID != "m1" {
		t.Errorf("telegram delivery should be the send_message one: %+v", run.Deliveries[0])
	}
	if !r.sent.WasSent("t-report", "telegram:1", "  Weekly numbers:\n12 signups. ") {
		t.Error("WasSent does not see the send_message")
	}
	if r.sent.WasSent("t-report", "slack:C0123", report) || r.sent.WasSent("other", "telegram:1", report) {
		t.Error("WasSent reports sends of another target or turn")
	}
	r.sent.Forget("t-report")
	if r.sent.WasSent("t-report", "telegram:1", report) {
		t.Error("Forget kept the turn's entries")
	}

	// In a chat turn the default allowlist is the chat itself.
	chat := chatCtx("telegram:55", "", "")
	if _, err := send.Call(chat, json.RawMessage(`{"text":"hello me"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := send.Call(chat, json.RawMessage(`{"target":"telegram:56","text":"hello you"}`)); err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Fatalf("send to another chat: %v", err)
	}
	custom := NewSendMessageTool(r.out, r.sent, r.j, func(_ context.Context, ci agent.CallInfo, target string) bool {
		return ci.Persona == "reporter" && strings.HasPrefix(target, "slack:")
	})
	if _, err := custom.Call(chatCtx("telegram:55", "reporter", ""), json.RawMessage(`{"target":"slack:C9","text":"fyi"}`)); err != nil {
		t.Fatalf("custom allowlist: %v", err)
	}
	r.out.setFail("slack:C9", errPlatformDown)
	if _, err := custom.Call(chatCtx("telegram:55", "reporter", ""), json.RawMessage(`{"target":"slack:C9","text":"again"}`)); err == nil || !strings.Contains(err.Error(), "502") {
		t.Fatalf("failed send: %v", err)
	}
}
