package daemon_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// Issue 13: llm.max_response_chars reaches the agent: a model that streams
// megabytes is cut at the configured bound and the user gets the text up to
// there with a visible marker.
func TestOverlongModelAnswerCutByConfiguredBound(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Text(strings.Repeat("blah ", 400_000))) // 2 MB
	tg := faketelegram.New(t, faketelegram.Options{})
	cfg := telegramConfig(t, llm, tg)
	cfg.LLM.MaxResponseChars = 2000
	startDaemon(t, cfg, tg.Token())

	tg.UserSays(tgUser, "say blah forever")
	const marker = "… [answer cut: the model sent more than 2000 characters]"
	eventually(t, "the cut answer", func() bool {
		s := tg.Sent(tgUser)
		return len(s) > 0 && strings.HasSuffix(s[len(s)-1].Plain, marker)
	})
	var all strings.Builder
	for _, m := range tg.Sent(tgUser) {
		all.WriteString(m.Plain)
	}
	if n := utf8.RuneCountInString(all.String()); n > 2000+2+utf8.RuneCountInString(marker) {
		t.Fatalf("the user got %d characters", n)
	}
}
