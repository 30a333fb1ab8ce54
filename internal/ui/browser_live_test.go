package ui_test

// Browser tests of the chat's live area: what an operator sees while a
// turn runs and when it ends.

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/browser"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// watchChat makes the page record (through DevTools, not page script)
// every text of the live answer area, "<hidden>" each time the area hides,
// and how often the history held a "notice" (a message outside any turn).
func watchChat(p *browser.Page) {
	p.Eval(`(() => {
		window.__live = []; window.__notices = 0;
		const text = document.getElementById("live-answer");
		const live = document.getElementById("live");
		const hist = document.getElementById("chat-history");
		new MutationObserver(() => window.__live.push(text.textContent))
			.observe(text, {childList: true, characterData: true, subtree: true});
		new MutationObserver(() => { if (live.hidden) { window.__live.push("<hidden>"); } })
			.observe(live, {attributes: true, attributeFilter: ["hidden"]});
		new MutationObserver(() => { if (hist.querySelector(".notice")) { window.__notices++; } })
			.observe(hist, {childList: true, subtree: true});
		return "ok";
	})()`)
}

// Issue 17 follow-up: "typing…" shows while the model thinks and goes away
// when the answer is there; the answer grows steadily in the live area
// (never wiped and re-drawn between edits, never shown as a separate
// message while it is written) and then stands in the history as the
// turn's answer.
func TestBrowserLiveAnswerGrowsSteadilyAndTypingStops(t *testing.T) {
	const answer = "Streaming steadily: this answer arrives in small pieces, one after another, " +
		"while the page keeps what it has already shown and only ever adds to it."
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	r := startRig(t, rigOptions{LLM: func(*fakellm.Request) fakellm.Response {
		<-gate
		return fakellm.Response{Content: answer, ChunkSize: 6, ChunkDelay: 20 * time.Millisecond}
	}})
	t.Cleanup(release) // runs before the rig's cleanup stops the daemon
	p := r.browse()
	openChat(p, r.base)
	watchChat(p)

	say(p, "tell me slowly")
	p.WaitVisible("#typing") // the model has not answered yet
	release()
	p.WaitText("#chat-history .msg.assistant", answer)
	p.WaitFor("the live area and the typing indicator hidden after the turn",
		`document.getElementById("live").hidden && document.getElementById("typing").hidden`)

	var seq []string
	if err := json.Unmarshal([]byte(p.Eval(`JSON.stringify(window.__live)`)), &seq); err != nil {
		t.Fatalf("read the recorded live texts: %v", err)
	}
	started, ended, partial, prev := false, false, 0, ""
	for _, s := range seq {
		shown := s != "" && s != "<hidden>"
		switch {
		case shown && ended:
			t.Fatalf("the live answer came back after it was cleared (flicker): %q", seq)
		case shown:
			if !strings.HasPrefix(answer, s) || len(s) < len(prev) {
				t.Fatalf("the live answer did not grow steadily: %q after %q (all: %q)", s, prev, seq)
			}
			if s != answer && s != prev {
				partial++
			}
			started, prev = true, s
		case started:
			ended = true
		}
	}
	if partial < 2 {
		t.Errorf("the live area showed %d partial answers, want the answer growing: %q", partial, seq)
	}
	if n := p.Eval(`String(window.__notices)`); n != "0" {
		t.Errorf("the history showed a separate bot message %s time(s) while the answer streamed", n)
	}
	if n := p.Count("#chat-history .msg.assistant"); n != 1 {
		t.Errorf("the history shows %d assistant messages, want the answer once", n)
	}
	p.NoScriptRan()
}
