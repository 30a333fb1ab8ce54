package daemon_test

import (
	"context"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// Issue 13, defect 6: send_message reaches only the turn's own chat (a job's
// turn: its deliver_to), never a chat merely listed in bot.admins or
// access.allow_from. A stranger's turn in open mode used to post into the
// admin's chat and an allowlisted group.
func TestSendMessageReachesOnlyTheTurnsChat(t *testing.T) {
	const (
		admin    = int64(100)
		group    = int64(-100200)
		jobChat  = int64(300)
		stranger = int64(777)
	)
	sends := func(targets ...string) fakellm.Response {
		var calls []fakellm.ToolCall
		for _, tg := range targets {
			args := `{"text":"psst from a tool"}`
			if tg != "" {
				args = `{"target":"` + tg + `","text":"psst from a tool"}`
			}
			calls = append(calls, fakellm.ToolCall{Name: "send_message", Arguments: args})
		}
		return fakellm.Response{ToolCalls: calls}
	}
	llm := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
		if len(r.ToolResults()) > 0 || !r.HasTools() {
			return fakellm.Response{Content: "done"}
		}
		if strings.Contains(r.LastUserText(), "post the digest") {
			return sends("telegram:100", "telegram:300")
		}
		return sends("telegram:100", "telegram:-100200", "")
	})
	tg := faketelegram.New(t, faketelegram.Options{})
	for _, id := range []int64{admin, jobChat} {
		tg.AddChat(faketelegram.Chat{ID: id, Type: "private"})
	}
	tg.AddChat(faketelegram.Chat{ID: group, Type: "supergroup", Title: "Team"})
	cfg := telegramConfig(t, llm, tg)
	cfg.Access.Mode = "open"
	cfg.Bot.Admins = []string{"telegram:100"}
	cfg.Access.AllowFrom = []string{"telegram:-100200"}
	cfg.Agent.Tools = []string{"send_message"}
	cfg.Jobs = []config.Job{{Name: "digest", Schedule: "0 0 1 1 *", Kind: "task", Prompt: "post the digest",
		DeliverTo: []string{"telegram:300"}}}
	d := startDaemon(t, cfg, tg.Token())

	// A stranger's turn: the admin's chat and the group are refused, the
	// stranger's own chat is reached.
	tg.UserSays(stranger, "send something to the admin and the team")
	eventually(t, "the stranger's answer", func() bool {
		for _, m := range tg.Sent(stranger) {
			if m.Plain == "done" {
				return true
			}
		}
		return false
	})
	var results []string
	for _, r := range llm.Requests() {
		for _, m := range r.ToolResults() {
			results = append(results, m.Content)
		}
	}
	joined := strings.Join(results, "\n")
	if strings.Count(joined, "not allowed to send") != 2 || !strings.Contains(joined, "telegram:100") ||
		!strings.Contains(joined, "telegram:-100200") || !strings.Contains(joined, "Sent to telegram:777") {
		t.Fatalf("tool results the model saw:\n%s", joined)
	}
	if got := tg.Sent(stranger); len(got) != 2 || got[0].Plain != "psst from a tool" {
		t.Fatalf("stranger's chat got %+v, want the tool's message and the answer", got)
	}

	// A job's turn: its deliver_to is reached, the admin's chat is not.
	if _, err := d.d.JobAction(context.Background(), "run", "digest"); err != nil {
		t.Fatal(err)
	}
	if got := tg.Sent(jobChat); len(got) == 0 || got[0].Plain != "psst from a tool" {
		t.Fatalf("the job's deliver_to got %+v", got)
	}
	settle()
	if got := tg.Sent(admin); len(got) != 0 {
		t.Fatalf("the admin's chat got %+v", got)
	}
	if got := tg.Sent(group); len(got) != 0 {
		t.Fatalf("the allowlisted group got %+v", got)
	}
}
