package telegram

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// Issue 27: private chats preview an answer with sendMessageDraft; the
// preview is shown (markup that does not parse as plain text) and no message
// is posted. Groups do not preview.
func TestPreviewInPrivateChats(t *testing.T) {
	r := newRig(t, nil)
	r.fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
	r.fake.AddChat(faketelegram.Chat{ID: -100, Type: "supergroup", Title: "Team"})
	private := channels.Target{Channel: "telegram", ChatID: "42"}
	group := channels.Target{Channel: "telegram", ChatID: "-100"}
	if !r.ch.Previews(private) || r.ch.Previews(group) {
		t.Fatalf("Previews: private %v, group %v; want true, false", r.ch.Previews(private), r.ch.Previews(group))
	}
	ctx := context.Background()
	if err := r.ch.Preview(ctx, private, 7, "Thinking <b>hard</b>"); err != nil {
		t.Fatalf("Preview: %v", err)
	}
	if err := r.ch.Preview(ctx, private, 7, "Thinking <b>harder"); err != nil {
		t.Fatalf("Preview with broken markup: %v", err)
	}
	drafts := r.fake.Drafts(42)
	if len(drafts) != 2 || drafts[0].Plain != "Thinking hard" || drafts[1].Plain != "Thinking harder" || drafts[1].DraftID != 7 {
		t.Fatalf("previews shown: %+v", drafts)
	}
	if sent := r.fake.Sent(42); len(sent) != 0 {
		t.Fatalf("a preview posted messages: %+v", sent)
	}
	err := r.ch.Preview(ctx, group, 7, "x")
	if kind, _ := channels.ClassifyError(err); kind != channels.KindPermanent {
		t.Errorf("preview in a group: %v (%v), want a permanent error", err, kind)
	}
}

// Issue 27: a server older than Bot API 9.3 answers sendMessageDraft 404.
// That is noticed once per process (one call, one log line): Previews then
// says no for every chat, and Preview returns ErrNoPreviews without a call.
func TestPreviewUnsupportedServerIsRememberedForTheProcess(t *testing.T) {
	fake := faketelegram.New(t, faketelegram.Options{NoDrafts: true})
	fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
	fake.AddChat(faketelegram.Chat{ID: 43, Type: "private"})
	logs := &syncBuffer{}
	ch, err := New(testOptions(fake, logs))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, chat := range []string{"42", "43", "42"} {
		err := ch.Preview(ctx, channels.Target{Channel: "telegram", ChatID: chat}, 1, "hello")
		if !errors.Is(err, channels.ErrNoPreviews) {
			t.Fatalf("Preview on an older server = %v, want ErrNoPreviews", err)
		}
	}
	if n := len(fake.Requests("sendMessageDraft")); n != 1 {
		t.Errorf("sendMessageDraft called %d times, want once per process", n)
	}
	if ch.Previews(channels.Target{Channel: "telegram", ChatID: "43"}) {
		t.Error("Previews still says yes after the server answered 404")
	}
	if n := strings.Count(logs.String(), "does not know sendMessageDraft"); n != 1 {
		t.Errorf("logged the fallback %d times, want once:\n%s", n, logs.String())
	}
}
