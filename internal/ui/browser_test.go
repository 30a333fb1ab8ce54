package ui_test

// Browser tests of the web console (issue 17): the real daemon with the
// fakes, driven through headless Chromium as an operator would. They skip,
// saying so, when no Chromium is found (see internal/testkit/browser).
// SWITCHBOARD_SCREENSHOTS=1 also writes docs/screenshots/.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels/web"
	"github.com/switchboard-bot/switchboard/internal/testkit/browser"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// streamedWithTool answers the first request with a current_time tool call
// and the request after the tool result with answer, streamed in small
// paced pieces so the page shows it growing.
func streamedWithTool(answer string) fakellm.Responder {
	return fakellm.Match(
		fakellm.Rule{When: fakellm.AfterToolResult, Respond: fakellm.Reply(fakellm.Response{
			Content: answer, ChunkSize: 6, ChunkDelay: 20 * time.Millisecond})},
		fakellm.Rule{Respond: fakellm.Reply(fakellm.Response{
			ToolCalls: []fakellm.ToolCall{{Name: "current_time", Arguments: `{}`}}})},
	)
}

// The web channel is a channel like the others: a posted line takes the
// whole handler path (persisted, queued, the agent with its tools, the
// answer streamed as a draft that is edited into the final text) and the
// session is "web:<conv>".
func TestWebChannelRunsTheWholeHandlerPath(t *testing.T) {
	const answer = "It is a fine time to say hello, and this answer arrives in pieces."
	r := startRig(t, rigOptions{LLM: streamedWithTool(answer)})
	ch := r.d.WebChannel()
	if ch == nil {
		t.Fatal("the web channel does not run with server.ui on")
	}
	events, cancel := ch.Subscribe("probe")
	defer cancel()
	if _, err := ch.Post(context.Background(), "probe", "operator", "what time is it?"); err != nil {
		t.Fatalf("Post: %v", err)
	}
	var kinds []string
	shown := map[string]string{}
	deadline := time.After(waitLong)
	for !strings.Contains(strings.Join(mapValues(shown), "|"), answer) {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the subscription closed")
			}
			kinds = append(kinds, ev.Kind)
			if ev.Kind == web.KindMessage || ev.Kind == web.KindEdit {
				shown[ev.ID] = ev.Text
			}
		case <-deadline:
			t.Fatalf("the answer never showed; events %v, messages %q", kinds, shown)
		}
	}
	if len(shown) != 1 {
		t.Errorf("the answer took %d messages, want the draft edited into one: %q", len(shown), shown)
	}
	if !contains(kinds, web.KindEdit) || !contains(kinds, web.KindTyping) {
		t.Errorf("events %v: want typing and a streamed (edited) answer", kinds)
	}
	h := ch.History("probe")
	if len(h) != 1 || h[0].Text != answer {
		t.Errorf("History = %+v, want the answer", h)
	}
	reqs := r.llm.Requests()
	if len(reqs) != 2 || reqs[0].LastUserText() != "what time is it?" || len(reqs[1].ToolResults()) != 1 {
		t.Fatalf("model requests: %d, want the question then the tool result", len(reqs))
	}
	eventually(t, "the session web:probe in the store", func() bool {
		list, err := r.d.Store().ListSessions(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			if s.Key == "web:probe" {
				return true
			}
		}
		return false
	})
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// watchLive makes the page remember every text the live answer area shows
// (a MutationObserver installed through DevTools, not page script), so a
// test can tell that the answer grew in steps instead of arriving whole.
func watchLive(p *browser.Page) {
	p.Eval(`(() => {
		window.__shown = [];
		const el = document.getElementById("live-answer");
		if (!el) { return "no live area"; }
		new MutationObserver(() => { if (el.textContent) { window.__shown.push(el.textContent); } })
			.observe(el, {childList: true, characterData: true, subtree: true});
		return "ok";
	})()`)
}

// shownLive returns what watchLive recorded.
func shownLive(t *testing.T, p *browser.Page) []string {
	t.Helper()
	var out []string
	if err := json.Unmarshal([]byte(p.Eval(`JSON.stringify(window.__shown || [])`)), &out); err != nil {
		t.Fatalf("read the recorded live texts: %v", err)
	}
	return out
}

// openChat opens the chat page, waits until its live stream is open (as it
// is long before a person has typed a line) and returns the conversation id.
func openChat(p *browser.Page, base string) string {
	mark := p.ResponseMark()
	p.Navigate(base + "/ui/chat")
	p.WaitVisible("#chat-input")
	p.WaitResponse(mark, "/ui/chat/stream")
	return p.Eval(`document.getElementById("chat").dataset.conv`)
}

// say types text into the chat and sends it with the Send button.
func say(p *browser.Page, text string) {
	p.Fill("#chat-input", text)
	p.Click("#chat-send")
}

// Issue 17: log in; pick a persona; chat; the answer streams in (the live
// area shows it growing), then the turn shows the tool call, which expands
// to its arguments and result, and the turn's timeline.
func TestBrowserChatStreamsTheAnswerAndShowsTheToolCall(t *testing.T) {
	const answer = "It is a fine time to say hello. This answer arrives in small pieces, " +
		"one after another, so the page shows it growing while the model is still writing."
	r := startRig(t, rigOptions{LLM: streamedWithTool(answer)})
	p := r.browse()
	if loc := p.Location(); !strings.Contains(loc, "/ui/") || strings.Contains(loc, "/ui/login") {
		t.Fatalf("after login the browser is at %s", loc)
	}

	conv := openChat(p, r.base)
	p.Select("#persona-select", "buddy")
	p.ClickAndLoad("#persona-form button")
	if got := p.Value("#persona-select"); got != "buddy" {
		t.Fatalf("after choosing buddy the chat shows persona %q", got)
	}

	watchLive(p)
	say(p, "what time is it?")
	p.WaitText("#chat-history .msg.user", "what time is it?")
	p.WaitText("#chat-history .msg.assistant", answer)

	var partial bool
	for _, s := range shownLive(t, p) {
		if s != answer && strings.HasPrefix(answer, strings.TrimSpace(s)) {
			partial = true
		}
	}
	if !partial {
		t.Errorf("the live area never showed part of the answer while it streamed: %q", shownLive(t, p))
	}

	// The tool call is there, collapsed; opening it shows arguments and result.
	p.WaitText("#chat-history details.toolcall summary", "current_time")
	p.Click("#chat-history details.toolcall summary")
	p.WaitVisible("#chat-history details.toolcall[open] pre")
	if res := p.Eval(`document.querySelectorAll("#chat-history details.toolcall[open] pre")[1].textContent`); strings.TrimSpace(res) == "" {
		t.Errorf("the tool call shows no result")
	}
	p.WaitText("#chat-history details.trace summary", "turn")

	reqs := r.llm.Requests()
	if len(reqs) != 2 || !strings.Contains(reqs[0].SystemPrompt(), "You are Buddy") {
		t.Errorf("the turn did not run with the chosen persona buddy (%d model requests)", len(reqs))
	}
	if got := reqs[0].LastUserText(); got != "what time is it?" {
		t.Errorf("the model got %q", got)
	}
	if h := r.d.WebChannel().History(conv); len(h) != 1 || h[0].Text != answer {
		t.Errorf("the web channel's history of %s = %+v, want the answer once", conv, h)
	}
	p.NoScriptRan()
	r.noSecretShown(p)
	r.screenshot(p, "chat")
}

// Issue 17 (security): a user message that is markup and a model answer
// with a javascript: link, raw HTML and a script tag render as inert text,
// live and after a reload: no element is made from them, no dialog opens,
// the Content-Security-Policy never has to block anything.
func TestBrowserHostileTextRendersInert(t *testing.T) {
	const hostile = `<img src=x onerror=alert(1)>`
	const answer = "Click [here](javascript:alert(document.domain)) or [there](JaVaScRiPt:alert(2)) " +
		"<img src=y onerror=alert(3)> <script>alert(4)</script> ![pic](javascript:alert(5))"
	r := startRig(t, rigOptions{LLM: fakellm.Text(answer)})
	p := r.browse()
	openChat(p, r.base)
	say(p, hostile)
	p.WaitText("#chat-history .msg.user", hostile) // shown as the text it is
	p.WaitText("#chat-history .msg.assistant", "here")

	check := func(when string) {
		t.Helper()
		for _, sel := range []string{
			`#chat-history img`, `#chat-history script`, `[onerror]`,
			`a[href^="javascript:" i]`, `a[href*="alert" i]`, `img[src="x"]`, `img[src="y"]`,
		} {
			if n := p.Count(sel); n != 0 {
				t.Errorf("%s: %d element(s) match %s: the text became markup", when, n, sel)
			}
		}
		// Links the answer does render (if any) do nothing when clicked.
		p.Eval(`(() => { document.querySelectorAll("#chat-history a").forEach(a => a.click()); return "" })()`)
		p.NoScriptRan()
	}
	check("live")
	p.Navigate(p.Location()) // the server-rendered history
	p.WaitText("#chat-history .msg.user", hostile)
	p.WaitText("#chat-history .msg.assistant", "here")
	check("after a reload")
	if d := p.Dialogs(); len(d) != 0 {
		t.Fatalf("dialogs opened: %q", d)
	}
}
