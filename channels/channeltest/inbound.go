package channeltest

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
)

// The behaviours of messages coming in. Where a test must know that the
// adapter is done with an event that may rightly never reach the sink (a
// redelivery, the bot's own message), a user's next message in the same
// chat follows it: adapters hand one chat's messages on in order, so once
// that one arrived the event before it was dealt with.

// testDirectMessage: a user's direct message reaches the sink once,
// normalized; the answer sent with Send is on the platform once.
func (s suite) testDirectMessage(t *testing.T, r *rig) {
	target := r.drv.DirectTarget()
	const text, next = "hello, are you there?", "and a second message"
	r.drv.UserSays(t, target, text)
	m := r.sink.waitText(t, text)
	r.drv.UserSays(t, target, next)
	msgs := r.sink.waitFor(t, "the second message", func(ms []channels.Message) bool { return indexOf(ms, next) >= 0 })
	if n := len(withText(msgs, text)); n != 1 {
		t.Errorf("the message was handed to the sink %d times, want once:\n%s", n, describe(msgs))
	}
	checks := []struct {
		bad  bool
		what string
	}{
		{m.Channel != r.ch.Name(), "Channel is not the adapter's Name " + r.ch.Name()},
		{m.ChatID != target.ChatID || m.ThreadID != target.ThreadID, "Target() is not the direct chat " + target.String()},
		{!m.Direct, "Direct is false in a one-to-one chat"},
		{m.MessageID == "", "MessageID is empty: the handler's dedup has no key"},
		{m.Sender.ID == "", "Sender.ID is empty"},
		{m.FromSelf || m.Sender.IsBot, "a user's message is flagged as the bot's (FromSelf or Sender.IsBot)"},
		{m.Time.IsZero(), "Time is zero"},
	}
	for _, c := range checks {
		if c.bad {
			t.Errorf("direct message: %s\n%s", c.what, describe([]channels.Message{m}))
		}
	}
	if _, ok := channels.ParseTarget(m.Target().String()); !ok {
		t.Errorf("the message's target %q is not a valid address", m.Target())
	}

	const answer = "Yes, I am here."
	chunks := r.ch.Format(answer)
	if len(chunks) != 1 {
		t.Fatalf("Format(%q) returned %d chunks, want 1", answer, len(chunks))
	}
	id, err := r.ch.Send(r.ctx, channels.Outgoing{Target: m.Target(), Text: chunks[0].Text, Plain: chunks[0].Plain,
		ReplyTo: m.MessageID, Nonce: r.nonce()})
	if err != nil {
		t.Fatalf("Send the answer: %v", err)
	}
	if id == "" {
		t.Error("Send returned an empty message id")
	}
	sent := r.waitSent(t, m.Target(), 1)
	if len(sent) != 1 || !strings.Contains(sent[0], answer) {
		t.Errorf("the platform shows the bot's messages %q, want the answer %q once", sent, answer)
	}
}

// testRedelivery: an event the platform delivers again reaches the sink with
// the same Channel and MessageID (or not at all), so it is answered once.
func (s suite) testRedelivery(t *testing.T, r *rig) {
	rd := need[RedeliveryDriver](t, r.drv, "RedeliveryDriver")
	target := rd.DirectTarget()
	const text, next = "please answer this once", "the message after the redelivery"
	ev := rd.UserSays(t, target, text)
	first := r.sink.waitText(t, text)
	rd.Redeliver(t, ev)
	rd.UserSays(t, target, next)
	msgs := r.sink.waitFor(t, "the message after the redelivery", func(ms []channels.Message) bool { return indexOf(ms, next) >= 0 })
	copies := withText(msgs, text)
	for _, m := range copies[1:] {
		if m.Channel != first.Channel || m.MessageID != first.MessageID {
			t.Errorf("the redelivered event reached the sink as %s/%q, the first delivery as %s/%q: the handler's dedup cannot tell them apart, the message is answered twice",
				m.Channel, m.MessageID, first.Channel, first.MessageID)
		}
	}
	t.Logf("the event reached the sink %d time(s)", len(copies))
}

// testGroupMention: in a group, a message without a mention arrives with
// Mentioned false and its text as written; one that mentions the bot with
// Mentioned true and the mention stripped.
func (s suite) testGroupMention(t *testing.T, r *rig) {
	gd := need[GroupDriver](t, r.drv, "GroupDriver")
	g := gd.GroupTarget()
	const plain, asked, next = "just chatting among ourselves", "what time is it?", "thanks, that is all"

	gd.UserSays(t, g, plain)
	m := r.sink.waitText(t, plain)
	if m.Mentioned {
		t.Errorf("a group message without a mention arrived with Mentioned true:\n%s", describe([]channels.Message{m}))
	}
	if m.Direct || m.ChatID != g.ChatID {
		t.Errorf("a group message arrived as direct or in another chat (want %s):\n%s", g, describe([]channels.Message{m}))
	}

	before := len(r.sink.all())
	gd.UserMentions(t, g, asked)
	gd.UserSays(t, g, next)
	msgs := r.sink.waitFor(t, "the message after the mention", func(ms []channels.Message) bool {
		return indexOf(ms[before:], next) >= 0
	})
	mentions := msgs[before : before+indexOf(msgs[before:], next)]
	if len(mentions) == 0 {
		t.Fatalf("the message mentioning the bot never reached the sink:\n%s", describe(msgs))
	}
	for _, m := range mentions {
		switch {
		case !m.Mentioned:
			t.Errorf("a message mentioning the bot arrived with Mentioned false:\n%s", describe([]channels.Message{m}))
		case m.Text != asked:
			t.Errorf("the mention was not stripped: Text = %q, want %q", m.Text, asked)
		case m.Direct || m.ChatID != g.ChatID:
			t.Errorf("the mention arrived as direct or in another chat (want %s):\n%s", g, describe([]channels.Message{m}))
		case m.MessageID != mentions[0].MessageID:
			t.Errorf("one mention reached the sink under two message ids (%q, %q): it would be answered twice", mentions[0].MessageID, m.MessageID)
		}
	}
	if n := withText(msgs, next); len(n) > 0 && n[0].Mentioned {
		t.Errorf("the message after the mention arrived with Mentioned true")
	}
}

// testOwnMessages: an event of the bot's own message never reaches the sink,
// or reaches it with FromSelf set, so the handler drops it.
func (s suite) testOwnMessages(t *testing.T, r *rig) {
	sd := need[SelfDriver](t, r.drv, "SelfDriver")
	target := sd.DirectTarget()
	const own, next = "an answer the bot gave earlier", "a user speaks after the bot"
	sd.BotSays(t, target, own)
	sd.UserSays(t, target, next)
	msgs := r.sink.waitFor(t, "the user's message after the bot's", func(ms []channels.Message) bool { return indexOf(ms, next) >= 0 })
	for _, m := range msgs[:indexOf(msgs, next)] {
		if !m.FromSelf {
			t.Errorf("the bot's own message reached the sink without FromSelf: the bot would answer itself:\n%s", describe([]channels.Message{m}))
		}
	}
	if m := withText(msgs, next)[0]; m.FromSelf {
		t.Errorf("a user's message arrived with FromSelf set")
	}
}

// testAttachment: a user's image arrives in Message.Media with its bytes,
// the caption as Text.
func (s suite) testAttachment(t *testing.T, r *rig) {
	md := need[MediaDriver](t, r.drv, "MediaDriver")
	target := md.DirectTarget()
	const caption = "what is in this picture?"
	data := sampleImage()
	md.UserSendsImage(t, target, caption, data)
	m := r.sink.waitText(t, caption)
	if len(m.Media) != 1 {
		t.Fatalf("the image arrived with %d attachments in Media, want 1:\n%s", len(m.Media), describe([]channels.Message{m}))
	}
	got := m.Media[0]
	if !strings.HasPrefix(got.MIME, "image/") {
		t.Errorf("the attachment's MIME type is %q, want image/*", got.MIME)
	}
	if !bytes.Equal(got.Data, data) {
		t.Errorf("the attachment's bytes differ from the image sent (%d bytes, want %d)", len(got.Data), len(data))
	}
}

// sampleImage is a small image's bytes (a JPEG header and a pattern).
func sampleImage() []byte {
	b := []byte{0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00}
	for i := range 245 {
		b = append(b, byte(i*7))
	}
	return append(b, 0xff, 0xd9)
}

// testLostConnection: messages sent before, while and after the connection
// is lost are each answered once (answeredOnce), and Send works after.
func (s suite) testLostConnection(t *testing.T, r *rig) {
	rc := need[ReconnectDriver](t, r.drv, "ReconnectDriver")
	target := rc.DirectTarget()
	texts := []string{"before the connection drops", "while the connection is down", "after the connection is back"}
	rc.UserSays(t, target, texts[0])
	r.sink.waitText(t, texts[0])
	rc.DropConnection(t)
	rc.UserSays(t, target, texts[1])
	r.sink.waitText(t, texts[1])
	rc.UserSays(t, target, texts[2])
	msgs := r.sink.waitFor(t, "the message after the reconnect", func(ms []channels.Message) bool { return indexOf(ms, texts[2]) >= 0 })
	answeredOnce(t, msgs, texts)
	const answer = "Still here after the reconnect."
	r.send(t, msgs[len(msgs)-1].Target(), answer)
	if sent := r.waitSent(t, msgs[len(msgs)-1].Target(), 1); len(sent) != 1 || !strings.Contains(sent[0], answer) {
		t.Errorf("after the reconnect the platform shows the bot's messages %q, want %q once", sent, answer)
	}
}

// testRestart: Run ends when its context is canceled and runs again on the
// same adapter; messages sent before, while it was stopped and after are
// each answered once (answeredOnce), and Send works.
func (s suite) testRestart(t *testing.T, r *rig) {
	target := r.drv.DirectTarget()
	texts := []string{"before the restart", "while the adapter is stopped", "after the restart"}
	r.drv.UserSays(t, target, texts[0])
	r.sink.waitText(t, texts[0])
	r.stop()
	// In-process channels take the message only once Run is back: say it
	// beside the restart.
	said := inBackground(t, func(tb testing.TB) { r.drv.UserSays(tb, target, texts[1]) })
	r.run(t)
	r.sink.waitText(t, texts[1])
	said()
	r.drv.UserSays(t, target, texts[2])
	msgs := r.sink.waitFor(t, "the message after the restart", func(ms []channels.Message) bool { return indexOf(ms, texts[2]) >= 0 })
	answeredOnce(t, msgs, texts)
	const answer = "Back after a restart."
	r.send(t, target, answer)
	if sent := r.waitSent(t, target, 1); len(sent) != 1 || !strings.Contains(sent[0], answer) {
		t.Errorf("after the restart the platform shows the bot's messages %q, want %q once", sent, answer)
	}
}

// answeredOnce checks that msgs are texts, each arrived (nothing lost), in
// order, and answered once: a message that reached the sink again (the
// platform delivers what an adapter stopped before acknowledging) carries
// the same message id, which the handler's dedup drops.
func answeredOnce(t *testing.T, msgs []channels.Message, texts []string) {
	t.Helper()
	prev := -1
	for _, text := range texts {
		copies := withText(msgs, text)
		if len(copies) == 0 {
			t.Errorf("%q never reached the sink: it was lost:\n%s", text, describe(msgs))
			continue
		}
		for _, c := range copies[1:] {
			if c.MessageID != copies[0].MessageID {
				t.Errorf("%q reached the sink under two message ids (%q, %q): it would be answered twice", text, copies[0].MessageID, c.MessageID)
			}
		}
		if len(copies) > 1 {
			t.Logf("%q reached the sink %d times, under one message id", text, len(copies))
		}
		i := indexOf(msgs, text)
		if i < prev {
			t.Errorf("%q reached the sink out of order:\n%s", text, describe(msgs))
		}
		prev = i
	}
	for _, m := range msgs {
		if !slices.Contains(texts, m.Text) {
			t.Errorf("the sink got a message nobody sent:\n%s", describe([]channels.Message{m}))
		}
	}
}
