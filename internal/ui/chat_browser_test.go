package ui_test

// Browser tests of issue 34, item 1: the chat page an operator keeps open —
// Markdown rendered (safely) while the answer streams, the approval request
// as a card with Approve / Deny buttons, the operator's message kept across
// a reload while a call waits, one name ("you") for the operator, no stale
// "No turns yet.", and a phone-sized screen without sideways scrolling.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/browser"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
)

// watchLiveMarkup makes the page record (through DevTools, not page script)
// what the live area held while it was shown: whether a <strong> appeared,
// and every element made from hostile markup. (A marker not closed yet —
// "**bo" — shows as typed until its end arrives, as in any renderer.)
func watchLiveMarkup(p *browser.Page) {
	p.Eval(`(() => {
		window.__md = {strong: false, bad: []};
		const live = document.getElementById("live");
		const el = document.getElementById("live-answer");
		new MutationObserver(() => {
			if (live.hidden) { return; }
			if (el.querySelector("strong")) { window.__md.strong = true; }
			el.querySelectorAll("img, script, iframe, [onerror], a[href^='javascript:' i]").forEach(n => window.__md.bad.push(n.outerHTML));
		}).observe(el, {childList: true, characterData: true, subtree: true});
		return "ok";
	})()`)
}

type liveMarkup struct {
	Strong bool     `json:"strong"`
	Bad    []string `json:"bad"`
}

func readLiveMarkup(t *testing.T, p *browser.Page) liveMarkup {
	t.Helper()
	var m liveMarkup
	if err := json.Unmarshal([]byte(p.Eval(`JSON.stringify(window.__md)`)), &m); err != nil {
		t.Fatalf("read what the live area showed: %v", err)
	}
	return m
}

// Issue 34, item 1: an answer's Markdown is rendered while it streams
// (**bold** is a <strong> in the live area before the turn ends), and hostile markup in a streamed answer stays inert: no
// element is made from raw HTML, no javascript: link, no script runs.
func TestBrowserChatRendersMarkdownWhileItStreams(t *testing.T) {
	cases := []struct {
		name, ask, answer, final string
	}{
		{"bold", "say something bold",
			"Here is **bold** text, and then more words that keep arriving in small pieces until the end.",
			"until the end."},
		{"hostile", "say something hostile",
			"Look **now**: <img src=x onerror=alert(1)> and [x](javascript:alert(1)), then words arriving in small pieces.",
			"arriving in small pieces."},
	}
	answers := map[string]string{}
	for _, c := range cases {
		answers[c.ask] = c.answer
	}
	r := startRig(t, rigOptions{LLM: func(req *fakellm.Request) fakellm.Response {
		return fakellm.Response{Content: answers[req.LastUserText()], ChunkSize: 5, ChunkDelay: 30 * time.Millisecond}
	}})
	p := r.browse()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			openConv(p, r.base, "md-"+c.name)
			watchLiveMarkup(p)
			say(p, c.ask)
			p.WaitText("#chat-history .msg.assistant", c.final)
			got := readLiveMarkup(t, p)
			if !got.Strong {
				t.Errorf("the live area never showed the streamed **bold** as <strong> before the turn ended")
			}
			if len(got.Bad) != 0 {
				t.Errorf("hostile markup became elements while streaming: %q", got.Bad)
			}
			noMarkupFrom(t, p, "after the turn")
			if d := p.Dialogs(); len(d) != 0 {
				t.Fatalf("dialogs opened: %q", d)
			}
		})
	}
}

// approvalLLM asks for current_time, then answers after the tool's result.
func approvalLLM() fakellm.Responder {
	return fakellm.Match(
		fakellm.Rule{When: fakellm.AfterToolResult, Respond: fakellm.Reply(fakellm.Response{Content: "It **ran**."})},
		fakellm.Rule{Respond: fakellm.Reply(fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "current_time", Arguments: `{"timezone":"UTC"}`}}})},
	)
}

// toolResultOf is the tool result the model got in the turn whose question
// was ask ("" if none yet).
func toolResultOf(r *rig, ask string) string {
	reqs := r.llm.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if res := reqs[i].ToolResults(); len(res) > 0 && reqs[i].LastUserText() == ask {
			return res[len(res)-1].Content
		}
	}
	return ""
}

// openConv opens chat conv and waits until its live stream is open.
func openConv(p *browser.Page, base, conv string) {
	mark := p.ResponseMark()
	p.Navigate(base + "/ui/chat?conv=" + conv)
	p.WaitVisible("#chat-input")
	p.WaitResponse(mark, "/ui/chat/stream")
}

// auditHas reports whether the store audited action in session key.
func auditHas(t *testing.T, r *rig, key, action string) bool {
	t.Helper()
	recs, err := r.d.Store().ListAudit(context.Background(), memory.AuditFilter{Session: key, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if rec.Action == action {
			return true
		}
	}
	return false
}

// Issue 34, item 1: the approval request is a card — its code block
// rendered, Approve and Deny buttons — and a reload while it waits still
// shows the operator's own message ("you", as everywhere) and the card.
// Approve runs the tool, Deny refuses it, each as the operator's
// /approve or /deny in that chat would (audited the same way). After the
// turn no "No turns yet." is left, and on a phone the chat does not scroll
// sideways.
func TestBrowserChatApprovalCard(t *testing.T) {
	r := startRig(t, rigOptions{LLM: approvalLLM(), Agent: "  require_approval: [current_time]\n"})
	p := r.browse()
	cases := []struct {
		decision, button string
		ran              bool
	}{
		{"approve", "button.approve", true},
		{"deny", "button.deny", false},
	}
	for _, c := range cases {
		t.Run(c.decision, func(t *testing.T) {
			ask := "what time is it? (" + c.decision + ")"
			conv := "card-" + c.decision
			openConv(p, r.base, conv)
			say(p, ask)
			card := "#live .approval-card " + c.button
			p.WaitVisible(card)
			if n := p.Count("#live-answer pre"); n == 0 || strings.Contains(p.Text("#live-answer"), "```") {
				t.Errorf("the request shows literal fences (%d code blocks): %q", n, p.Text("#live-answer"))
			}

			// A reload while the call waits: the question and the card are there.
			p.Navigate(r.base + "/ui/chat?conv=" + conv)
			p.WaitText("#chat-history .msg.user .text", ask)
			p.WaitVisible(card)
			if who := p.Text("#chat-history .msg.user .who"); !strings.HasPrefix(who, "you") {
				t.Errorf("the operator's message is from %q, want you", who)
			}
			if c.decision == "approve" {
				r.screenshot(p, "approval")
			}

			// A phone: nothing wider than the screen.
			phone(t, p)
			p.WaitFor("the chat laid out for the phone", `window.innerWidth <= 400`)
			if w := p.Eval(`String(document.documentElement.scrollWidth - document.documentElement.clientWidth)`); w != "0" {
				t.Errorf("on a 390px screen the chat scrolls sideways by %spx", w)
			}
			p.WaitVisible(card) // the buttons are on the screen
			desktop(t, p)

			p.Click(card)
			p.WaitFor("the turn's end", `document.getElementById("live").hidden && !!document.querySelector("#chat-history .turn .msg.assistant")`)
			result := toolResultOf(r, ask)
			if ran := strings.Contains(result, `status="ok"`); ran != c.ran {
				t.Errorf("after %s the model got the tool result %q (ran: %v, want %v)", c.decision, result, ran, c.ran)
			}
			action := "approval." + c.decision
			eventually(t, "the "+action+" audit record", func() bool { return auditHas(t, r, "web:"+conv, action) })
			if p.Count(".approval-card") != 0 {
				t.Errorf("the card is still shown after the decision")
			}
			if main := p.Text("main"); strings.Contains(main, "No turns yet.") || strings.Contains(main, "No messages yet.") {
				t.Errorf("the chat still says there is nothing: %q", main)
			}
			// The page reloaded after the turn names the operator "you" too.
			p.Navigate(r.base + "/ui/chat?conv=" + conv)
			p.WaitVisible("#chat-history .turn .msg.assistant")
			for _, who := range strings.Split(p.Eval(`[...document.querySelectorAll("#chat-history .msg.user .who")].map(e => e.textContent).join("|")`), "|") {
				if !strings.HasPrefix(who, "you") {
					t.Errorf("an operator's message is from %q, want you", who)
				}
			}
			p.NoScriptRan()
			r.noSecretShown(p)
		})
	}
}
