package ui_test

// The chat page's live stream over HTTP against the real daemon: what it
// sends when it opens, while a turn streams and when the turn ends.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// liveState is the JSON of a "live" event.
type liveState struct {
	Typing bool `json:"typing"`
	Drafts []struct {
		ID   string `json:"id"`
		Text string `json:"text"`
	} `json:"drafts"`
}

func parseLive(t *testing.T, ev sseEvent) liveState {
	t.Helper()
	var st liveState
	if err := json.Unmarshal([]byte(ev.Data), &st); err != nil {
		t.Fatalf("live event %q: %v", ev.Data, err)
	}
	return st
}

func (l liveState) text() string {
	var parts []string
	for _, d := range l.Drafts {
		parts = append(parts, d.Text)
	}
	return strings.Join(parts, "\n\n")
}

// nextAny waits for the next event of any name.
func nextAny(t *testing.T, events <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(cWait):
		t.Fatalf("no event within %s", cWait)
	}
	return sseEvent{}
}

// sendChat posts text to conv as app.js does.
func sendChat(t *testing.T, c *client, conv, text string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.base+"/ui/chat/send", strings.NewReader(url.Values{"conv": {conv}, "text": {text}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-CSRF-Token", c.csrf)
	if got := c.do(req); got.Code != http.StatusNoContent {
		t.Fatalf("send = %d: %s", got.Code, got.Body)
	}
}

// An answer that finished before the page's stream connected (a slow page
// load, a reconnect) is in the first event the stream sends, once, as the
// turn's answer: no reload needed.
func TestChatStreamStartsWithAnAnswerThatCameBefore(t *testing.T) {
	const answer = "Answered **before** you looked"
	r := startConsole(t, cOptions{LLM: fakellm.Text(answer)})
	chatTurn(t, r, "early", "are you there?")
	cEventually(t, "the answer delivered to the web channel", func() bool {
		h := r.d.WebChannel().History("early")
		return len(h) == 1 && h[0].Text == answer
	})
	c := newClient(t, r.base)
	c.login(cAdminToken)
	events := c.stream("/ui/chat/stream?conv=early")
	first := nextAny(t, events)
	if first.Name != "history" {
		t.Fatalf("the stream starts with %q, want the history", first.Name)
	}
	if !strings.Contains(first.Data, "<strong>before</strong>") || !strings.Contains(first.Data, "are you there?") {
		t.Fatalf("the first history lacks the earlier turn:\n%s", first.Data)
	}
	if n := strings.Count(first.Data, "before</strong>"); n != 1 || strings.Contains(first.Data, "notice") {
		t.Errorf("the answer shows %d times (or as a notice):\n%s", n, first.Data)
	}
	if st := parseLive(t, nextEvent(t, events, "live")); st.Typing || len(st.Drafts) != 0 {
		t.Errorf("the live state after the turn = %+v, want nothing running", st)
	}
}

// A page that connects in the middle of a turn sees the turn as it is: the
// typing indicator and the draft in the live area, not in the history; the
// draft's edits change only the live area; the turn's end re-renders the
// history once and turns the indicator off.
func TestChatStreamShowsATurnAlreadyRunning(t *testing.T) {
	r := startConsole(t, cOptions{})
	ch := r.d.WebChannel()
	cEventually(t, "the web channel running", ch.Ready)
	ctx := context.Background()
	target := channels.Target{Channel: "web", ChatID: "mid"}
	stop := ch.StartTyping(ctx, target)
	defer stop()
	id, err := ch.Send(ctx, channels.Outgoing{Target: target, Text: "half an answer"})
	if err != nil {
		t.Fatal(err)
	}

	c := newClient(t, r.base)
	c.login(cAdminToken)
	page := c.get("/ui/chat?conv=mid")
	if !strings.Contains(page.Body, `id="live-answer"><div class="md draft"><p>half an answer</p></div>`) || strings.Contains(page.Body, `class="msg assistant notice"`) {
		t.Errorf("the chat page does not show the draft in the live area only:\n%s", page.Body)
	}
	events := c.stream("/ui/chat/stream?conv=mid")
	if h := nextEvent(t, events, "history"); strings.Contains(h.Data, "half an answer") {
		t.Errorf("the draft shows in the history:\n%s", h.Data)
	}
	if st := nextAny(t, events); st.Name != "live" || !parseLive(t, st).Typing || parseLive(t, st).text() != "half an answer" {
		t.Fatalf("after the history: %s %q, want the live state with the draft", st.Name, st.Data)
	}

	if err := ch.Edit(ctx, target, id, "half an answer, and the rest"); err != nil {
		t.Fatal(err)
	}
	if ev := nextAny(t, events); ev.Name != "live" || parseLive(t, ev).text() != "half an answer, and the rest" {
		t.Fatalf("after a draft edit: %s %q, want only the live state with the new text", ev.Name, ev.Data)
	}
	stop()
	h := nextAny(t, events)
	if h.Name != "history" || !strings.Contains(h.Data, "half an answer, and the rest") {
		t.Fatalf("at the turn's end: %s %q, want the history with the finished message", h.Name, h.Data)
	}
	if ev := nextAny(t, events); ev.Name != "live" || parseLive(t, ev).Typing || len(parseLive(t, ev).Drafts) != 0 {
		t.Fatalf("after the turn: %s %q, want the live area empty and typing off", ev.Name, ev.Data)
	}
}

// A streamed turn through the whole handler path: typing goes on, the
// draft grows in "live" events with no history re-render until the turn
// ends, then the history has the answer and typing is off.
func TestChatStreamKeepsDraftsOutOfTheHistory(t *testing.T) {
	const answer = "This answer is streamed in small pieces so that the draft is edited several times."
	gate := make(chan struct{})
	var open sync.Once
	release := func() { open.Do(func() { close(gate) }) }
	r := startConsole(t, cOptions{LLM: func(*fakellm.Request) fakellm.Response {
		<-gate
		return fakellm.Response{Content: answer, ChunkSize: 8, ChunkDelay: 60 * time.Millisecond}
	}})
	t.Cleanup(release) // before the fake model's cleanup waits for the request
	c := newClient(t, r.base)
	c.login(cAdminToken)
	cEventually(t, "the web channel running", r.d.WebChannel().Ready)
	events := c.stream("/ui/chat/stream?conv=flow")
	nextEvent(t, events, "history")
	if st := parseLive(t, nextEvent(t, events, "live")); st.Typing {
		t.Fatalf("typing before anything was sent: %+v", st)
	}
	sendChat(t, c, "flow", "tell me something")
	ev := nextAny(t, events)
	if ev.Name != "live" || !parseLive(t, ev).Typing {
		t.Fatalf("after sending: %s %q, want typing on", ev.Name, ev.Data)
	}
	release()

	var drafts []string
	for {
		ev := nextAny(t, events)
		if ev.Name == "history" { // only the turn's end may re-render it
			if !strings.Contains(ev.Data, answer) || strings.Contains(ev.Data, "notice") {
				t.Fatalf("a history was sent mid-turn (after drafts %q):\n%s", drafts, ev.Data)
			}
			break
		}
		if ev.Name != "live" {
			t.Fatalf("unexpected %s event mid-turn", ev.Name)
		}
		st := parseLive(t, ev)
		if !st.Typing {
			t.Fatalf("typing went off before the history had the answer (drafts %q)", drafts)
		}
		if text := st.text(); text != "" {
			if !strings.HasPrefix(answer, text) {
				t.Fatalf("a draft %q is not part of the answer", text)
			}
			drafts = append(drafts, text)
		}
	}
	if len(drafts) < 2 {
		t.Errorf("the draft grew in %d steps (%q), want several", len(drafts), drafts)
	}
	// Then the live area empties and typing goes off (a final formatting
	// edit of the answer may re-render the history once more first).
	for i := 0; ; i++ {
		ev := nextAny(t, events)
		if ev.Name == "live" && !parseLive(t, ev).Typing && len(parseLive(t, ev).Drafts) == 0 {
			break
		}
		if i == 3 || ev.Name == "live" && len(parseLive(t, ev).Drafts) != 0 {
			t.Fatalf("after the turn's history: %s %q, want typing off and no drafts", ev.Name, ev.Data)
		}
	}
}
