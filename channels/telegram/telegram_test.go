package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

func TestPrivateChatRoundTrip(t *testing.T) {
	r := newRig(t, nil)
	sent := r.fake.UserSays(42, "hello there")

	got := r.rec.wait(t, 1)[0]
	want := channels.Message{
		Channel:   "telegram",
		ChatID:    "42",
		MessageID: fmt.Sprintf("42:%d", sent.MessageID),
		Sender:    channels.Sender{ID: "42", Name: "User"},
		Text:      "hello there",
		Direct:    true,
		Time:      time.Unix(sent.Date, 0).UTC(),
	}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Fatalf("normalized message\n got %+v\nwant %+v", got, want)
	}
	if got.Target().String() != "telegram:42" {
		t.Errorf("target = %s", got.Target())
	}

	id, err := r.ch.Send(context.Background(), channels.Outgoing{
		Target: got.Target(), Text: "<b>Hi</b> &amp; welcome", Plain: "Hi & welcome", ReplyTo: got.MessageID,
	})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	msgs := r.fake.WaitSent(t, 42, 1, waitLong)
	if id != fmt.Sprintf("42:%d", msgs[0].MessageID) {
		t.Errorf("Send returned %q, fake has message %d", id, msgs[0].MessageID)
	}
	if msgs[0].Plain != "Hi & welcome" || msgs[0].ParseMode != "HTML" || msgs[0].Text != "<b>Hi</b> &amp; welcome" {
		t.Errorf("user sees %+v", msgs[0])
	}
	if msgs[0].ReplyToMessageID != 0 {
		t.Errorf("private answers are not quote-replies, got reply to %d", msgs[0].ReplyToMessageID)
	}

	// Start-up: webhook removed before polling, command menu registered.
	if n := len(r.fake.Requests("deleteWebhook")); n != 1 {
		t.Errorf("deleteWebhook calls = %d, want 1", n)
	}
	var names []string
	for _, c := range r.fake.Commands() {
		names = append(names, c.Command)
	}
	if strings.Join(names, ",") != "help,reset,stop,status,persona" {
		t.Errorf("registered commands = %v", names)
	}
	r.fake.WaitConfirmed(t, 1001, waitLong)
}

func TestGroupMentionsAndReplies(t *testing.T) {
	r := newRig(t, nil)
	const group = -100200
	bot := r.fake.Bot()
	r.fake.AddChat(faketelegram.Chat{ID: group, Type: "supergroup", Title: "Team"})
	botMsgID, err := r.ch.Send(context.Background(), channels.Outgoing{
		Target: channels.Target{Channel: "telegram", ChatID: fmt.Sprint(group)}, Text: "I am here",
	})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	botMsg := r.fake.Sent(group)[0].MessageID
	if botMsgID != fmt.Sprintf("%d:%d", group, botMsg) {
		t.Fatalf("Send id %q", botMsgID)
	}
	userMsg := r.fake.UserSays(group, "first post")

	cases := []struct {
		name          string
		text          string
		opts          []faketelegram.SayOption
		wantText      string
		wantMentioned bool
		wantReplyTo   string
	}{
		{name: "plain", text: "just chatting", wantText: "just chatting"},
		{name: "leading mention", text: "@switchboard_bot what's up?", wantText: "what's up?", wantMentioned: true},
		{name: "mention with comma", text: "@switchboard_bot, summarize", wantText: "summarize", wantMentioned: true},
		{name: "mention after emoji (UTF-16)", text: "👋🏽 hey @switchboard_bot, how are you", wantText: "👋🏽 hey, how are you", wantMentioned: true},
		{name: "mention at end", text: "thoughts? @switchboard_bot", wantText: "thoughts?", wantMentioned: true},
		{name: "mention any case", text: "@Switchboard_Bot hi", wantText: "hi", wantMentioned: true},
		{name: "other user mentioned", text: "@alice_smith look", wantText: "@alice_smith look"},
		{name: "text mention of the bot", text: "Switchboard please help",
			opts: []faketelegram.SayOption{faketelegram.Entities(faketelegram.MessageEntity{
				Type: "text_mention", Offset: 0, Length: 11, User: &bot})},
			wantText: "please help", wantMentioned: true},
		{name: "reply to the bot", text: "and then?", opts: []faketelegram.SayOption{faketelegram.ReplyTo(botMsg)},
			wantText: "and then?", wantMentioned: true, wantReplyTo: fmt.Sprintf("%d:%d", group, botMsg)},
		{name: "reply to a user", text: "agreed", opts: []faketelegram.SayOption{faketelegram.ReplyTo(userMsg.MessageID)},
			wantText: "agreed", wantReplyTo: fmt.Sprintf("%d:%d", group, userMsg.MessageID)},
	}
	for _, tc := range cases {
		r.fake.UserSays(group, tc.text, tc.opts...)
	}
	got := r.rec.wait(t, len(cases)+1)[1:]
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := got[i]
			if m.Text != tc.wantText || m.Mentioned != tc.wantMentioned || m.ReplyTo != tc.wantReplyTo {
				t.Errorf("got text %q mentioned %v reply %q; want %q %v %q", m.Text, m.Mentioned, m.ReplyTo,
					tc.wantText, tc.wantMentioned, tc.wantReplyTo)
			}
			if m.Direct || m.ChatID != fmt.Sprint(group) || m.Sender.ID != "1000001" || m.Sender.Name != "Alice Liddell" {
				t.Errorf("group message fields: %+v", m)
			}
		})
	}

	// Answering in the group quotes the question (reply_parameters).
	q := got[1]
	if _, err := r.ch.Send(context.Background(), channels.Outgoing{Target: q.Target(), Text: "fine", ReplyTo: q.MessageID}); err != nil {
		t.Fatalf("Send reply: %v", err)
	}
	sent := r.fake.WaitSent(t, group, 2, waitLong)
	if want := strings.TrimPrefix(q.MessageID, fmt.Sprint(group)+":"); fmt.Sprint(sent[1].ReplyToMessageID) != want {
		t.Errorf("reply went to %d, want %s", sent[1].ReplyToMessageID, want)
	}
	req := r.fake.Requests("sendMessage")
	if rp := req[len(req)-1].Fields["reply_parameters"]; !strings.Contains(rp, `"allow_sending_without_reply":true`) {
		t.Errorf("reply_parameters = %s", rp)
	}
}

func TestSenderFlags(t *testing.T) {
	r := newRig(t, nil)
	const group = -300
	other := faketelegram.User{ID: 777, IsBot: true, FirstName: "Other", Username: "other_bot"}
	r.fake.UserSays(group, "beep", faketelegram.From(other))
	r.fake.UserSays(group, "echo", faketelegram.From(r.fake.Bot()))
	r.fake.UserSays(group, "admin speaking", faketelegram.AsChat(faketelegram.Chat{ID: group, Type: "supergroup", Title: "Team"}))
	got := r.rec.wait(t, 3)
	if s := got[0].Sender; !s.IsBot || s.ID != "777" || got[0].FromSelf {
		t.Errorf("other bot: %+v self=%v", s, got[0].FromSelf)
	}
	if !got[1].FromSelf || !got[1].Sender.IsBot {
		t.Errorf("own message: %+v", got[1])
	}
	if s := got[2].Sender; s.ID != fmt.Sprint(group) || s.Name != "Team" || s.IsBot {
		t.Errorf("anonymous admin sender: %+v", s)
	}
}

func TestForumTopic(t *testing.T) {
	r := newRig(t, nil)
	const forum = -100777
	topic := r.fake.CreateTopic(forum, "Ideas")
	r.fake.UserSays(forum, "@switchboard_bot new idea", faketelegram.InTopic(topic))
	r.fake.UserSays(forum, "in general")
	got := r.rec.wait(t, 2)
	if got[0].ThreadID != fmt.Sprint(topic) || got[0].ReplyTo != "" || !got[0].Mentioned || got[0].Text != "new idea" {
		t.Errorf("topic message: %+v", got[0])
	}
	if got[0].Target().String() != fmt.Sprintf("telegram:%d:%d", forum, topic) {
		t.Errorf("topic target = %s", got[0].Target())
	}
	if got[1].ThreadID != "" {
		t.Errorf("message outside topics got thread %q", got[1].ThreadID)
	}

	if _, err := r.ch.Send(context.Background(), channels.Outgoing{Target: got[0].Target(), Text: "noted"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	sent := r.fake.WaitSent(t, forum, 1, waitLong)
	if sent[0].ThreadID != topic {
		t.Errorf("answer landed in thread %d, want %d", sent[0].ThreadID, topic)
	}
	// A reply to the bot inside the topic is a real reply and a mention.
	r.fake.UserSays(forum, "more please", faketelegram.InTopic(topic), faketelegram.ReplyTo(sent[0].MessageID))
	m := r.rec.wait(t, 3)[2]
	if !m.Mentioned || m.ReplyTo != fmt.Sprintf("%d:%d", forum, sent[0].MessageID) || m.ThreadID != fmt.Sprint(topic) {
		t.Errorf("reply in topic: %+v", m)
	}
}

func TestCommandsAddressedToBots(t *testing.T) {
	r := newRig(t, nil)
	const group = -500
	r.fake.UserSays(group, "/help@switchboard_bot")
	r.fake.UserSays(group, "/help@other_bot")
	r.fake.UserSays(group, "/persona@switchboard_bot pirate")
	r.fake.UserSays(group, "/reset")
	r.fake.UserSays(group, "done")
	got := r.rec.wait(t, 4)
	want := []struct {
		text      string
		mentioned bool
	}{{"/help", true}, {"/persona pirate", true}, {"/reset", false}, {"done", false}}
	for i, w := range want {
		if got[i].Text != w.text || got[i].Mentioned != w.mentioned {
			t.Errorf("message %d: %q mentioned=%v, want %q %v", i, got[i].Text, got[i].Mentioned, w.text, w.mentioned)
		}
	}
	r.fake.WaitConfirmed(t, 1005, waitLong)
	if n := len(r.rec.all()); n != 4 {
		t.Errorf("sink got %d messages; the command for another bot must be ignored", n)
	}
}

func TestEditedMessageIgnored(t *testing.T) {
	r := newRig(t, nil)
	m := r.fake.UserSays(42, "helo")
	r.rec.wait(t, 1)
	if _, err := r.fake.UserEdits(42, m.MessageID, "hello"); err != nil {
		t.Fatal(err)
	}
	r.fake.UserSays(42, "next")
	got := r.rec.wait(t, 2)
	r.fake.WaitConfirmed(t, 1003, waitLong)
	if len(r.rec.all()) != 2 || got[1].Text != "next" {
		t.Errorf("sink got %+v; the edit must be ignored", r.rec.all())
	}
	if !strings.Contains(r.logs.String(), "edited message ignored") {
		t.Errorf("no debug log for the ignored edit")
	}
}

func TestParseEntitiesFallsBackToPlain(t *testing.T) {
	r := newRig(t, nil)
	r.fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
	target := channels.Target{Channel: "telegram", ChatID: "42"}

	// Markup Telegram itself rejects (unclosed tag).
	if _, err := r.ch.Send(context.Background(), channels.Outgoing{Target: target, Text: "<b>bold without end", Plain: "bold without end"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	// A scripted rejection of otherwise valid markup.
	r.fake.FailNext("sendMessage", 1, faketelegram.CantParseEntities())
	if _, err := r.ch.Send(context.Background(), channels.Outgoing{Target: target, Text: "<i>fine</i>", Plain: "fine"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	sent := r.fake.WaitSent(t, 42, 2, waitLong)
	for i, want := range []string{"bold without end", "fine"} {
		if sent[i].Text != want || sent[i].ParseMode != "" {
			t.Errorf("message %d = %q (parse mode %q), want plain %q", i, sent[i].Text, sent[i].ParseMode, want)
		}
	}
	if n := len(r.fake.Requests("sendMessage")); n != 4 {
		t.Errorf("sendMessage calls = %d, want 4 (two rejected, two plain resends)", n)
	}
}

func TestSendErrorClassification(t *testing.T) {
	r := newRig(t, nil)
	// Run's deleteWebhook must have finished before the fake is closed at the
	// end, or Run fails with the fake's shutdown (a flake, 1 run in ~50).
	waitReady(t, r.ch)
	const group, super = -600, -100600
	r.fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
	r.fake.AddChat(faketelegram.Chat{ID: group, Type: "group", Title: "Old"})
	send := func(chat int64) error {
		_, err := r.ch.Send(context.Background(), channels.Outgoing{
			Target: channels.Target{Channel: "telegram", ChatID: fmt.Sprint(chat), ThreadID: ""}, Text: "x"})
		return err
	}
	cases := []struct {
		name      string
		setup     func()
		chat      int64
		wantKind  channels.SendErrorKind
		wantAfter time.Duration
		wantText  string
	}{
		{name: "429", setup: func() { r.fake.FailNext("sendMessage", 1, faketelegram.TooManyRequests(7)) },
			chat: 42, wantKind: channels.KindRateLimited, wantAfter: 7 * time.Second, wantText: "retry after 7"},
		{name: "blocked 403", setup: func() { r.fake.FailNext("sendMessage", 1, faketelegram.Forbidden()) },
			chat: 42, wantKind: channels.KindPermanent, wantText: "bot was blocked by the user"},
		{name: "kicked 403", setup: func() { r.fake.Block(group) },
			chat: group, wantKind: channels.KindPermanent, wantText: "kicked"},
		{name: "server error", setup: func() { r.fake.Unblock(group); r.fake.FailNext("sendMessage", 1, faketelegram.InternalError()) },
			chat: 42, wantKind: channels.KindTemporary, wantText: "Internal Server Error"},
		{name: "unknown chat", setup: func() {}, chat: 31337, wantKind: channels.KindPermanent, wantText: "chat not found"},
		{name: "migrated", setup: func() { r.fake.MigrateChat(group, super) },
			chat: group, wantKind: channels.KindPermanent, wantText: "upgraded to supergroup"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup()
			err := send(tc.chat)
			if err == nil {
				t.Fatal("Send succeeded")
			}
			kind, after := channels.ClassifyError(err)
			if kind != tc.wantKind || after != tc.wantAfter {
				t.Errorf("classified %v / %v, want %v / %v (err %v)", kind, after, tc.wantKind, tc.wantAfter, err)
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error %q does not mention %q", err, tc.wantText)
			}
			if strings.Contains(err.Error(), r.fake.Token()) {
				t.Errorf("error shows the token: %v", err)
			}
		})
	}

	// The migration error names the new chat, for the handler to move the session.
	err := send(group)
	var mig *MigratedError
	if !errors.As(err, &mig) || mig.NewChatID != super {
		t.Fatalf("errors.As MigratedError: %v", err)
	}
	var mover interface{ MovedTo() channels.Target }
	if !errors.As(err, &mover) || mover.MovedTo().String() != fmt.Sprintf("telegram:%d", super) {
		t.Errorf("MovedTo = %v", mover)
	}
	// Sending to the new id works.
	if err := send(super); err != nil {
		t.Errorf("send to the supergroup: %v", err)
	}

	// Transport: nothing listening → temporary (never sent), token hidden.
	r.fake.Close()
	err = send(42)
	if kind, _ := channels.ClassifyError(err); kind != channels.KindTemporary {
		t.Errorf("connection refused classified %v: %v", kind, err)
	}
	if err == nil || strings.Contains(err.Error(), r.fake.Token()) {
		t.Errorf("transport error shows the token or is nil: %v", err)
	}
}

func TestAmbiguousWhenConnectionDropsAfterRequest(t *testing.T) {
	// A server that reads the request and hangs up without answering: the
	// message may or may not have been posted.
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj, ok := w.(http.Hijacker)
		if !ok {
			t.Error("no hijacker")
			return
		}
		conn, _, _ := hj.Hijack()
		_ = conn.Close()
	}))
	defer drop.Close()
	ch, err := New(Options{Token: faketelegram.DefaultToken, APIURL: drop.URL, PerChatRate: rate.Inf, GlobalRate: rate.Inf})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ch.Send(context.Background(), channels.Outgoing{Target: channels.Target{Channel: "telegram", ChatID: "42"}, Text: "hi"})
	if kind, _ := channels.ClassifyError(err); kind != channels.KindAmbiguous {
		t.Errorf("dropped connection classified %v: %v", kind, err)
	}
	if strings.Contains(fmt.Sprint(err), faketelegram.DefaultToken) {
		t.Errorf("error shows the token: %v", err)
	}
}

func TestEdit(t *testing.T) {
	r := newRig(t, nil)
	r.fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
	target := channels.Target{Channel: "telegram", ChatID: "42"}
	id, err := r.ch.Send(context.Background(), channels.Outgoing{Target: target, Text: "Thinking"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.ch.Edit(context.Background(), target, id, "Thinking <b>harder</b>"); err != nil {
		t.Fatalf("Edit: %v", err)
	}
	if err := r.ch.Edit(context.Background(), target, id, "Thinking <b>harder</b>"); err != nil {
		t.Errorf("unchanged edit must succeed, got %v", err)
	}
	// A bare message id works too; broken markup falls back to plain text.
	bare := strings.TrimPrefix(id, "42:")
	if err := r.ch.Edit(context.Background(), target, bare, "Done <b>now"); err != nil {
		t.Fatalf("Edit with broken markup: %v", err)
	}
	sent := r.fake.Sent(42)
	if len(sent) != 1 || sent[0].Plain != "Done now" || sent[0].Edits != 2 {
		t.Errorf("after edits: %+v", sent)
	}
	err = r.ch.Edit(context.Background(), target, "42:9999", "x")
	if kind, _ := channels.ClassifyError(err); kind != channels.KindPermanent || !strings.Contains(err.Error(), "message to edit not found") {
		t.Errorf("edit of a missing message: %v (%v)", err, kind)
	}
	if r.ch.EditInterval() != time.Second {
		t.Errorf("default EditInterval = %v", r.ch.EditInterval())
	}
}

func TestHandleErrorMeansRedelivery(t *testing.T) {
	fake := faketelegram.New(t, faketelegram.Options{})
	first := fake.UserSays(42, "one")
	fake.UserSays(42, "two")
	logs := &syncBuffer{}
	ch, err := New(testOptions(fake, logs))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	rec.fail = func(call int, m channels.Message) error {
		if call == 1 {
			return errors.New("inbox write failed")
		}
		return nil
	}
	stop := startRun(t, ch, rec.sink())
	defer stop()

	got := rec.wait(t, 3)
	texts := []string{got[0].Text, got[1].Text, got[2].Text}
	if strings.Join(texts, ",") != "one,one,two" {
		t.Fatalf("sink saw %v; want the failed update again before the next one", texts)
	}
	if got[0].MessageID != got[1].MessageID || got[0].MessageID != fmt.Sprintf("42:%d", first.MessageID) {
		t.Errorf("redelivery changed the MessageID: %q vs %q", got[0].MessageID, got[1].MessageID)
	}
	fake.WaitConfirmed(t, 1002, waitLong)
	if n := fake.Deliveries(1001); n != 2 {
		t.Errorf("update 1001 fetched %d times, want 2", n)
	}
	if n := fake.Deliveries(1002); n < 1 {
		t.Errorf("update 1002 never fetched")
	}
}

func TestSameUpdateTwiceKeepsMessageID(t *testing.T) {
	// The bot stops after the sink accepted an update but before the next
	// getUpdates confirmed it; the restarted bot receives it again. Dedup is
	// the handler's job: the adapter must produce the same MessageID.
	fake := faketelegram.New(t, faketelegram.Options{})
	fake.UserSays(42, "hi")
	logs := &syncBuffer{}
	ch, err := New(testOptions(fake, logs))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	sink := channels.SinkFunc(func(c context.Context, m channels.Message) error {
		err := rec.sink().Handle(c, m)
		once.Do(cancel) // crash right after the inbox write
		return err
	})
	if err := ch.Run(ctx, sink); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if fake.Confirmed(1001) {
		t.Fatal("update confirmed although the bot stopped before the next poll")
	}
	stop := startRun(t, ch, rec.sink())
	defer stop()
	got := rec.wait(t, 2)
	if got[0].MessageID != got[1].MessageID || got[0].MessageID == "" {
		t.Errorf("MessageIDs differ: %q vs %q", got[0].MessageID, got[1].MessageID)
	}
	fake.WaitConfirmed(t, 1001, waitLong)
}

func TestPhotoMedia(t *testing.T) {
	jpeg := make([]byte, 5000)
	for i := range jpeg {
		jpeg[i] = byte(i * 7)
	}
	jpeg[0], jpeg[1] = 0xFF, 0xD8
	cases := []struct {
		name     string
		limit    int64
		wantData []byte
	}{
		{name: "full size", limit: 1 << 20, wantData: jpeg},
		{name: "largest size under the cap", limit: 1000, wantData: jpeg[:16]},
		{name: "media disabled", limit: -1, wantData: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(o *Options) { o.MaxMediaBytes = tc.limit })
			r.fake.UserSendsPhoto(42, jpeg, "what is this?")
			m := r.rec.wait(t, 1)[0]
			if m.Text != "what is this?" {
				t.Errorf("caption → Text = %q", m.Text)
			}
			if tc.wantData == nil {
				if len(m.Media) != 0 {
					t.Errorf("media = %d items, want none", len(m.Media))
				}
				return
			}
			if len(m.Media) != 1 || m.Media[0].MIME != "image/jpeg" || string(m.Media[0].Data) != string(tc.wantData) {
				t.Fatalf("media = %+v", m.Media)
			}
			if !strings.HasSuffix(m.Media[0].Name, ".jpg") {
				t.Errorf("media name %q", m.Media[0].Name)
			}
		})
	}
}

func TestPhotoDownloadFailureKeepsCaption(t *testing.T) {
	r := newRig(t, nil)
	r.fake.FailNext("getFile", 1, faketelegram.InternalError())
	r.fake.UserSendsPhoto(42, []byte("\xff\xd8tiny"), "caption survives")
	m := r.rec.wait(t, 1)[0]
	if m.Text != "caption survives" || len(m.Media) != 0 {
		t.Errorf("got %+v", m)
	}
	if !strings.Contains(r.logs.String(), "photo dropped") {
		t.Error("no warning about the dropped photo")
	}
}

func TestTypingStops(t *testing.T) {
	for _, how := range []string{"stop", "ctx"} {
		t.Run(how, func(t *testing.T) {
			r := newRig(t, nil)
			r.fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stop := r.ch.StartTyping(ctx, channels.Target{Channel: "telegram", ChatID: "42"})
			reqs := r.fake.WaitRequests(t, "sendChatAction", 3, waitLong)
			if reqs[0].Fields["action"] != "typing" || reqs[0].Fields["chat_id"] != "42" {
				t.Errorf("sendChatAction fields %v", reqs[0].Fields)
			}
			count := func() int { return len(r.fake.Requests("sendChatAction")) }
			if how == "stop" {
				stop()
				stop() // idempotent
			} else {
				// No synchronization point with ctx: wait for a quiet spell
				// of five refresh intervals (a refresh in flight at cancel
				// time may still land), then require silence.
				cancel()
				deadline := time.Now().Add(waitLong)
				for n := count(); ; {
					time.Sleep(5 * r.ch.opts.TypingInterval)
					m := count()
					if m == n {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("sendChatAction never stopped after ctx was canceled (%d calls)", m)
					}
					n = m
				}
			}
			n := count()
			time.Sleep(10 * r.ch.opts.TypingInterval)
			if m := count(); m != n {
				t.Errorf("sendChatAction continued after %s: %d → %d", how, n, m)
			}
			stop()
		})
	}
}

func TestTypingFailureIsOnlyLogged(t *testing.T) {
	r := newRig(t, nil)
	r.fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
	r.fake.FailNext("sendChatAction", 2, faketelegram.Forbidden())
	stop := r.ch.StartTyping(context.Background(), channels.Target{Channel: "telegram", ChatID: "42"})
	r.fake.WaitRequests(t, "sendChatAction", 3, waitLong)
	stop()
	if !strings.Contains(r.logs.String(), "typing indicator failed") {
		t.Error("typing failure not logged")
	}
}

func TestPacingPerChat(t *testing.T) {
	r := newRig(t, func(o *Options) { o.PerChatRate = rate.Every(time.Hour); o.PerChatBurst = 1 })
	r.fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
	r.fake.AddChat(faketelegram.Chat{ID: 43, Type: "private"})
	send := func(chat string, timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		_, err := r.ch.Send(ctx, channels.Outgoing{Target: channels.Target{Channel: "telegram", ChatID: chat}, Text: "x"})
		return err
	}
	if err := send("42", waitLong); err != nil {
		t.Fatalf("first send: %v", err)
	}
	// The limiter refuses at once when the next slot lies beyond the deadline.
	err := send("42", time.Minute)
	if err == nil || !strings.Contains(err.Error(), "wait for send slot") {
		t.Errorf("second send in the same chat within the interval: %v", err)
	}
	if err := send("43", waitLong); err != nil {
		t.Errorf("another chat was held back: %v", err)
	}
	if n := len(r.fake.Requests("sendMessage")); n != 2 {
		t.Errorf("sendMessage calls = %d, want 2", n)
	}
}

func TestReadinessFollowsPolling(t *testing.T) {
	fake := faketelegram.New(t, faketelegram.Options{})
	fake.FailNext("getUpdates", 3, faketelegram.InternalError())
	fake.UserSays(42, "pending") // the first good poll returns at once
	logs := &syncBuffer{}
	ch, err := New(testOptions(fake, logs))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Ready() {
		t.Fatal("ready before Run")
	}
	stop := startRun(t, ch, newRecorder().sink())
	fake.WaitRequests(t, "getUpdates", 4, waitLong)
	waitReady(t, ch)
	if !strings.Contains(logs.String(), "getUpdates failed") {
		t.Error("poll failures not logged")
	}
	stop()
	if ch.Ready() {
		t.Error("ready after Run returned")
	}
}

func TestRateLimitedPollHonoursRetryAfter(t *testing.T) {
	fake := faketelegram.New(t, faketelegram.Options{})
	fake.FailNext("getUpdates", 1, faketelegram.TooManyRequests(30))
	logs := &syncBuffer{}
	ch, err := New(testOptions(fake, logs))
	if err != nil {
		t.Fatal(err)
	}
	stop := startRun(t, ch, newRecorder().sink())
	defer stop()
	fake.WaitRequests(t, "getUpdates", 1, waitLong)
	deadline := time.Now().Add(waitLong)
	for !strings.Contains(logs.String(), "retry_in=30s") {
		if time.Now().After(deadline) {
			t.Fatalf("no 30s wait logged:\n%s", logs.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
	// RetryMin is 5ms: without honouring retry_after the poller would have
	// called again many times by now.
	time.Sleep(100 * time.Millisecond)
	if n := len(fake.Requests("getUpdates")); n != 1 {
		t.Errorf("getUpdates called %d times during the flood wait", n)
	}
	if ch.Ready() {
		t.Error("ready while rate limited")
	}
	stop() // cancel interrupts the wait
}

func TestBadTokenStopsRun(t *testing.T) {
	fake := faketelegram.New(t, faketelegram.Options{})
	opts := testOptions(fake, &syncBuffer{})
	opts.Token = "999:WRONG-secret-token"
	ch, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	err = ch.Run(context.Background(), newRecorder().sink())
	if err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("Run = %v, want an Unauthorized error", err)
	}
	if strings.Contains(err.Error(), opts.Token) || strings.Contains(fmt.Sprint(ch), opts.Token) {
		t.Errorf("token leaked: %v / %v", err, ch)
	}
}

func TestRunTwiceRefused(t *testing.T) {
	r := newRig(t, nil)
	r.fake.WaitRequests(t, "getUpdates", 1, waitLong)
	if err := r.ch.Run(context.Background(), newRecorder().sink()); err == nil {
		t.Error("a second concurrent Run was accepted")
	}
}

func TestWebhookMode(t *testing.T) {
	fake := faketelegram.New(t, faketelegram.Options{})
	logs := &syncBuffer{}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	opts := testOptions(fake, logs)
	opts.Mode = ModeWebhook
	opts.WebhookURL = srv.URL + WebhookPath
	opts.WebhookSecret = "s3cret-Value_1"
	ch, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if ch.WebhookPattern() != "POST /webhooks/telegram" {
		t.Fatalf("pattern %q", ch.WebhookPattern())
	}
	mux.Handle(ch.WebhookPattern(), ch.WebhookHandler())

	rec := newRecorder()
	failNext := make(chan struct{}, 1)
	rec.fail = func(int, channels.Message) error {
		select {
		case <-failNext:
			return errors.New("inbox unavailable")
		default:
			return nil
		}
	}

	// Before Run the handler refuses work so Telegram retries later.
	ctx := context.Background()
	early := fake.NewMessage(42, "too early")
	if code, err := fake.PostWebhook(ctx, opts.WebhookURL, opts.WebhookSecret, faketelegram.Update{Message: &early}); err != nil || code != http.StatusServiceUnavailable {
		t.Errorf("before Run: %d %v", code, err)
	}

	stop := startRun(t, ch, rec.sink())
	defer stop()
	url, secret := fake.WaitWebhook(t, waitLong)
	if url != opts.WebhookURL || secret != opts.WebhookSecret {
		t.Fatalf("setWebhook(%q, %q)", url, secret)
	}
	waitReady(t, ch)
	if len(fake.Requests("getUpdates")) != 0 {
		t.Error("webhook mode must not poll")
	}

	good := fake.NewMessage(42, "via webhook")
	if code, err := fake.DeliverWebhook(ctx, faketelegram.Update{Message: &good}); err != nil || code != http.StatusOK {
		t.Fatalf("valid delivery: %d %v", code, err)
	}
	if m := rec.wait(t, 1)[0]; m.Text != "via webhook" || m.MessageID != fmt.Sprintf("42:%d", good.MessageID) {
		t.Errorf("got %+v", m)
	}

	bad := fake.NewMessage(42, "forged")
	for _, s := range []string{"wrong-secret", ""} {
		code, err := fake.PostWebhook(ctx, opts.WebhookURL, s, faketelegram.Update{Message: &bad})
		if err != nil || code != http.StatusUnauthorized {
			t.Errorf("secret %q: %d %v, want 401", s, code, err)
		}
	}

	// Handle fails → 500 → Telegram redelivers the same update → same MessageID.
	again := fake.NewMessage(42, "retry me")
	failNext <- struct{}{}
	upd := faketelegram.Update{UpdateID: 5001, Message: &again}
	if code, _ := fake.DeliverWebhook(ctx, upd); code != http.StatusInternalServerError {
		t.Errorf("failing sink answered %d, want 500", code)
	}
	if code, _ := fake.DeliverWebhook(ctx, upd); code != http.StatusOK {
		t.Errorf("redelivery answered %d", code)
	}
	got := rec.wait(t, 3)
	if len(got) != 3 || got[1].MessageID != got[2].MessageID || got[2].Text != "retry me" {
		t.Errorf("sink saw %+v", got)
	}
	for _, m := range got {
		if m.Text == "forged" {
			t.Error("a forged update reached the sink")
		}
	}
	if strings.Contains(logs.String(), opts.WebhookSecret) {
		t.Error("webhook secret logged")
	}
}

func TestNewValidation(t *testing.T) {
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"no token", Options{}, "token is required"},
		{"bad mode", Options{Token: "1:a", Mode: "push"}, "unknown mode"},
		{"bad api url", Options{Token: "1:a", APIURL: "ftp://x"}, "api_url"},
		{"webhook without url", Options{Token: "1:a", Mode: ModeWebhook, WebhookSecret: "abc"}, "webhook_url"},
		{"webhook without secret", Options{Token: "1:a", Mode: ModeWebhook, WebhookURL: "https://x/y"}, "webhook_secret"},
		{"webhook secret charset", Options{Token: "1:a", Mode: ModeWebhook, WebhookURL: "https://x/y", WebhookSecret: "no spaces!"}, "webhook_secret"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want error about %q", err, tc.want)
			}
		})
	}
	ch, err := New(Options{Token: "1:a", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Name() != "telegram" || ch.WebhookPattern() != "" || ch.Ready() {
		t.Errorf("polling channel: name %q pattern %q ready %v", ch.Name(), ch.WebhookPattern(), ch.Ready())
	}
}

func TestOptionsNeverShowSecrets(t *testing.T) {
	o := Options{Token: "42:SECRET-token", WebhookSecret: "hook-SECRET", APIURL: "http://127.0.0.1:1"}
	var logs syncBuffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "telegram", o)
	for _, out := range []string{fmt.Sprint(o), fmt.Sprintf("%+v", o), fmt.Sprintf("%v", &o), logs.String()} {
		if strings.Contains(out, "SECRET") {
			t.Errorf("secret shown: %s", out)
		}
	}
}
