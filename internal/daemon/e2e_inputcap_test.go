package daemon_test

import (
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// Issue 13, defect 7: agent.max_message_chars reaches the handler: a long
// Telegram message is cut before the model sees it and the user is told.
func TestLongMessageCutByConfiguredCap(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Text("Short answer."))
	tg := faketelegram.New(t, faketelegram.Options{})
	cfg := telegramConfig(t, llm, tg)
	cfg.Agent.MaxMessageChars = 50
	cfg.Agent.MaxTurnChars = 100
	startDaemon(t, cfg, tg.Token())

	tg.UserSays(tgUser, strings.Repeat("long ", 60)+"TAIL")
	eventually(t, "the answer", func() bool {
		s := tg.Sent(tgUser)
		return len(s) == 1 && strings.HasSuffix(s[0].Plain, "Short answer.")
	})
	want := strings.Repeat("long ", 10) + "\n\n[… truncated: message was 304 characters, limit 50]"
	if got := userTexts(llm); len(got) != 1 || got[0] != want {
		t.Fatalf("model saw %q\nwant %q", got, want)
	}
	if s := tg.Sent(tgUser)[0].Plain; !strings.HasPrefix(s, "(Note: your message was 304 characters long, so I read only the first 50.)") {
		t.Fatalf("user saw %q", s)
	}
}
