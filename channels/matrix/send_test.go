package matrix

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakematrix"
)

func newSender(t *testing.T) (*Adapter, *fakematrix.Server) {
	t.Helper()
	fake := newFake(t, fakematrix.Options{})
	a, err := New(testOptions(fake, nil, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	return a, fake
}

// What an answer looks like on Matrix: an m.notice with HTML in
// formatted_body (the model's raw HTML shown as text), the plain text in
// body, no mentions; in a thread with the thread relation.
func TestSendFormatsAndThreads(t *testing.T) {
	a, fake := newSender(t)
	ctx := context.Background()
	chunks := a.Format("**bold** and <script>alert(1)</script>\nnext line\n\n```go\nx := 1\ny := 2\n```")
	if len(chunks) != 1 {
		t.Fatalf("%d chunks", len(chunks))
	}
	c := chunks[0]
	for _, want := range []string{"<b>bold</b>", "&lt;script&gt;", "<br>next line", "<pre><code class=\"language-go\">x := 1\ny := 2"} {
		if !strings.Contains(c.Text, want) {
			t.Errorf("formatted %q lacks %q", c.Text, want)
		}
	}
	if strings.Contains(c.Text, "<script>") {
		t.Errorf("raw HTML passed through: %q", c.Text)
	}
	root := fake.UserSays(groupRoom, alice, "root")
	target := channels.Target{Channel: Name, ChatID: groupRoom, ThreadID: root.EventID}
	id, err := a.Send(ctx, channels.Outgoing{Target: target, Text: c.Text, Plain: c.Plain, Nonce: "turn1-0"})
	if err != nil || id == "" {
		t.Fatalf("Send = %q, %v", id, err)
	}
	sent := fake.Sent(groupRoom)
	if len(sent) != 1 {
		t.Fatalf("sent %+v", sent)
	}
	m := sent[0]
	if m.MsgType != "m.notice" || m.Format != htmlFormat || m.FormattedBody != c.Text || !strings.Contains(m.Body, "<script>") || string(m.Mentions) != "{}" {
		t.Errorf("sent %+v", m)
	}
	if m.RelatesTo["rel_type"] != "m.thread" || m.RelatesTo["event_id"] != root.EventID {
		t.Errorf("thread relation %v", m.RelatesTo)
	}
}

// Exactly once: the same chunk (same nonce) sent again — after a crash or
// a transport error — is the same event, not a second message.
func TestSendSameNonceOnce(t *testing.T) {
	a, fake := newSender(t)
	out := channels.Outgoing{Target: channels.Target{Channel: Name, ChatID: dmRoom}, Text: "hi", Plain: "hi", Nonce: "turn7-0"}
	id1, err1 := a.Send(context.Background(), out)
	id2, err2 := a.Send(context.Background(), out)
	if err1 != nil || err2 != nil || id1 != id2 {
		t.Errorf("two sends of one chunk: %q %v, %q %v", id1, err1, id2, err2)
	}
	if n := len(fake.Sent(dmRoom)); n != 1 {
		t.Errorf("the room shows %d messages, want 1", n)
	}
	// A transport failure is Temporary (the handler retries it): the retry
	// with the same transaction id cannot double the message.
	fake.DropConnections()
	out.Nonce = "turn7-1"
	if _, err := a.Send(context.Background(), out); err != nil {
		if kind, _ := channels.ClassifyError(err); kind != channels.KindTemporary {
			t.Errorf("send over a dropped connection: %v (%s), want temporary", err, kind)
		}
		if _, err := a.Send(context.Background(), out); err != nil {
			t.Errorf("the retry: %v", err)
		}
	}
	if n := len(fake.Sent(dmRoom)); n != 2 {
		t.Errorf("the room shows %d messages, want 2", n)
	}
}

// The homeserver's errors map onto the handler's kinds.
func TestSendErrorKinds(t *testing.T) {
	tests := []struct {
		fail  fakematrix.Failure
		kind  channels.SendErrorKind
		after time.Duration
	}{
		{fakematrix.RateLimited(2500), channels.KindRateLimited, 2500 * time.Millisecond},
		{fakematrix.Failure{Status: 403, ErrCode: "M_FORBIDDEN", Message: "not in room"}, channels.KindPermanent, 0},
		{fakematrix.Failure{Status: 502, ErrCode: "M_UNKNOWN", Message: "bad gateway"}, channels.KindTemporary, 0},
	}
	for _, tc := range tests {
		a, fake := newSender(t)
		fake.FailNext("send", 1, tc.fail)
		_, err := a.Send(context.Background(), channels.Outgoing{Target: channels.Target{Channel: Name, ChatID: dmRoom}, Text: "x", Nonce: "n"})
		kind, after := channels.ClassifyError(err)
		if kind != tc.kind || after != tc.after {
			t.Errorf("%d %s: kind %s after %s (%v), want %s after %s", tc.fail.Status, tc.fail.ErrCode, kind, after, err, tc.kind, tc.after)
		}
		if len(fake.Sent(dmRoom)) != 0 {
			t.Errorf("a failed send posted a message")
		}
	}
}

// Edits replace the text (m.replace with m.new_content); typing shows
// until stop takes it down.
func TestEditAndTyping(t *testing.T) {
	a, fake := newSender(t)
	ctx := context.Background()
	target := channels.Target{Channel: Name, ChatID: dmRoom}
	id, err := a.Send(ctx, channels.Outgoing{Target: target, Text: "Think", Nonce: "e0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Edit(ctx, target, id, a.Format("Thinking **done**")[0].Text); err != nil {
		t.Fatal(err)
	}
	sent := fake.Sent(dmRoom)
	if len(sent) != 1 || sent[0].Body != "Thinking done" || sent[0].FormattedBody != "Thinking <b>done</b>" || sent[0].Edits != 1 {
		t.Errorf("after the edit: %+v", sent)
	}
	stop := a.StartTyping(ctx, target)
	fake.WaitFor(t, waitLong, "typing on", func() bool { _, on := fake.Typing(dmRoom); return on })
	stop()
	stop()
	if _, on := fake.Typing(dmRoom); on {
		t.Error("typing still shown after stop returned")
	}
}

// Long answers: every chunk within ChunkLimit even when line breaks grow
// the HTML, nothing lost.
func TestFormatManyLines(t *testing.T) {
	a, _ := newSender(t)
	md := strings.Repeat("a\n", 6000)
	chunks := a.Format(md)
	total := 0
	for _, c := range chunks {
		if n := len([]rune(c.Text)); n > ChunkLimit {
			t.Fatalf("a chunk of %d characters, limit %d", n, ChunkLimit)
		}
		total += strings.Count(c.Plain, "a")
	}
	if total != 6000 {
		t.Errorf("the chunks hold %d of 6000 lines", total)
	}
}

// In a group the answer quotes the question (m.in_reply_to); in a direct
// chat it does not.
func TestReplyQuotesOnlyInGroups(t *testing.T) {
	a, fake := newSender(t)
	running(t, a, newRecorder()) // reads m.direct
	ctx := context.Background()
	for _, room := range []string{groupRoom, dmRoom} {
		q := fake.UserSays(room, alice, "question")
		if _, err := a.Send(ctx, channels.Outgoing{Target: channels.Target{Channel: Name, ChatID: room}, Text: "answer", ReplyTo: q.EventID, Nonce: room}); err != nil {
			t.Fatal(err)
		}
	}
	if rel := fake.Sent(groupRoom)[0].RelatesTo; rel == nil || rel["m.in_reply_to"] == nil {
		t.Errorf("the group answer does not quote the question: %v", rel)
	}
	if rel := fake.Sent(dmRoom)[0].RelatesTo; rel != nil {
		t.Errorf("the direct answer quotes the question: %v", rel)
	}
}

// A chunk's transaction id is scoped to the store that made it: after the
// data directory is reset (or restored from an older backup) the turn ids
// start again from in-1, and a new answer whose nonce equals one the
// homeserver still remembers must be posted, not swallowed as a repeat.
// The same store resending after a crash keeps its transaction ids.
func TestTxnIDsScopedToTheStore(t *testing.T) {
	fake := newFake(t, fakematrix.Options{})
	ctx := context.Background()
	send := func(kv KV, text string) {
		t.Helper()
		a, err := New(testOptions(fake, kv, &syncBuffer{}))
		if err != nil {
			t.Fatal(err)
		}
		out := channels.Outgoing{Target: channels.Target{Channel: Name, ChatID: dmRoom}, Text: text, Plain: text, Nonce: "in-1/0"}
		if _, err := a.Send(ctx, out); err != nil {
			t.Fatalf("send %q: %v", text, err)
		}
	}
	kept := newMemKV()
	send(kept, "first answer")
	send(kept, "first answer") // the same store after a crash: a repeat
	if n := len(fake.Sent(dmRoom)); n != 1 {
		t.Fatalf("a resend from the same store shows %d messages, want 1", n)
	}
	send(newMemKV(), "an answer after the data dir was reset")
	if n := len(fake.Sent(dmRoom)); n != 2 {
		t.Errorf("after a reset the room shows %d messages, want 2 (the new answer was swallowed as a repeat)", n)
	}
}
