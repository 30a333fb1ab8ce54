package hub_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
)

const messageMarker = "[… truncated: message was 950000 characters, limit 16000]"

// Issue 13, defect 7: a 950 KB message is cut before it is stored or sent:
// the model gets the first agent.max_message_chars characters and a marker,
// the history holds no more, later turns do not carry it whole again, and
// the user is told.
func TestHugeMessageCutBeforeStoreAndModel(t *testing.T) {
	llm := fakellm.Start(t, func(req *fakellm.Request) fakellm.Response { return fakellm.Response{Content: "ok"} })
	r := newRig(t, llm, openAccess())
	huge := strings.Repeat("é", hub.DefaultMaxMessageChars) + strings.Repeat("x", 950000-hub.DefaultMaxMessageChars-11) + "SECRET-TAIL"
	if n := utf8.RuneCountInString(huge); n != 950000 {
		t.Fatalf("test message has %d characters", n)
	}
	r.say("c1", "ann", huge)
	got := r.ch.WaitSent(t, "memory:c1", 1, wait)
	const note = "(Note: your message was 950,000 characters long, so I read only the first 16,000.)"
	if !strings.HasPrefix(got[0].Text, note) || !strings.HasSuffix(got[0].Text, "ok") {
		t.Fatalf("answer %q does not start with the truncation note", got[0].Text)
	}
	want := strings.Repeat("é", hub.DefaultMaxMessageChars) + "\n\n" + messageMarker
	if u := llm.LastRequest().LastUserText(); u != want {
		t.Fatalf("model got %d characters ending %q", utf8.RuneCountInString(u), u[max(0, len(u)-80):])
	}
	hist, err := r.store.LoadHistory(context.Background(), "memory:c1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 || hist[0].Role != memory.RoleUser || hist[0].Content != want {
		t.Fatalf("stored user message: %d messages, first %d characters", len(hist), utf8.RuneCountInString(hist[0].Content))
	}

	// The next turn carries the cut message in its history, not the original.
	r.say("c1", "ann", "and now?")
	r.ch.WaitSent(t, "memory:c1", 2, wait)
	size := len(llm.LastRequest().Raw)
	if size > 4*hub.DefaultMaxMessageChars || strings.Contains(string(llm.LastRequest().Raw), "SECRET-TAIL") {
		t.Fatalf("the next model request is %d bytes", size)
	}
	if s := r.ch.Sent("memory:c1"); strings.Contains(s[1].Text, "Note:") {
		t.Fatalf("a short message got the truncation note: %q", s[1].Text)
	}
	waitInboxEmpty(t, r.store)
}

// The merge of messages that arrived during a turn is capped at
// agent.max_turn_chars, and the user is told.
func TestMidTurnMergeCapped(t *testing.T) {
	g := newGate(func(req *fakellm.Request) fakellm.Response { return fakellm.Response{Content: "ok"} })
	llm := fakellm.Start(t, g.responder)
	t.Cleanup(func() { close(g.release) })
	r := newRig(t, llm, openAccess())
	r.h.SetInputLimits(100, 250)
	r.say("c1", "ann", "first")
	g.waitArrived(t)
	for _, c := range []string{"a", "b", "c", "d", "e"} {
		r.say("c1", "ann", strings.Repeat(c, 90))
	}
	r.say("c1", "ann", strings.Repeat("z", 150)) // over the message cap too
	g.release <- struct{}{}
	got := g.waitArrived(t)
	g.release <- struct{}{}
	// 5×90, the cut sixth message with its marker, and separators; cut to
	// 250 and the turn marker.
	sixth := strings.Repeat("z", 100) + "\n\n[… truncated: message was 150 characters, limit 100]"
	total := 5*90 + 5*2 + utf8.RuneCountInString(sixth)
	wantTail := fmt.Sprintf("\n\n[… truncated: these messages were %d characters together, limit 250]", total)
	if !strings.HasSuffix(got, wantTail) || utf8.RuneCountInString(got) != 250+utf8.RuneCountInString(wantTail) {
		t.Fatalf("merged turn text (%d characters): %q", utf8.RuneCountInString(got), got)
	}
	sent := r.ch.WaitSent(t, "memory:c1", 2, wait)
	note := fmt.Sprintf("(Note: your message was 150 characters long, so I read only the first 100; your messages together were %d characters long, so I read only the first 250.)", total)
	if sent[0].Text != "ok" || !strings.HasPrefix(sent[1].Text, note) {
		t.Fatalf("answers %q", texts(sent))
	}
}
