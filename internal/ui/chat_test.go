package ui_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// The chat page's stream: a message sent from the console is answered, and
// the stream brings the re-rendered conversation with the answer.
func TestChatSendAndStream(t *testing.T) {
	const answer = "Plain **answer** here"
	r := startConsole(t, cOptions{LLM: fakellm.Text(answer)})
	c := newClient(t, r.base)
	c.login(cAdminToken)
	cEventually(t, "the web channel running", r.d.WebChannel().Ready)
	events := c.stream("/ui/chat/stream?conv=s1")
	req, err := http.NewRequest(http.MethodPost, r.base+"/ui/chat/send", strings.NewReader(url.Values{"conv": {"s1"}, "text": {"hi <b>"}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-CSRF-Token", c.csrf)
	if got := c.do(req); got.Code != http.StatusNoContent {
		t.Fatalf("send = %d: %s", got.Code, got.Body)
	}
	for {
		ev := nextEvent(t, events, "history")
		if strings.Contains(ev.Data, "<strong>answer</strong>") {
			if !strings.Contains(ev.Data, "hi &lt;b&gt;") || !strings.Contains(ev.Data, `class="msg assistant"`) {
				t.Errorf("the history lacks the question or the answer as the assistant's:\n%s", ev.Data)
			}
			return
		}
		t.Logf("history without the answer yet:\n%s", ev.Data)
	}
}
