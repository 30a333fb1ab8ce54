package slack

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakeslack"
)

func TestSocketDMRoundTripAndEdit(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	f.AddUser("U100", "Ada Lovelace")
	r := start(t, f, testOptions(f), newRecorder())

	dm, env := f.UserDMs("U100", "hello bot")
	got := r.sink.waitN(t, 1)[0]
	want := channels.Message{
		Channel: "slack", ChatID: fakeslack.DMChannel("U100"), MessageID: fakeslack.DMChannel("U100") + ":" + dm.TS,
		Sender: channels.Sender{ID: "U100", Name: "Ada Lovelace"}, Text: "hello bot", Direct: true,
		Time: tsTime(dm.TS),
	}
	if got.Channel != want.Channel || got.ChatID != want.ChatID || got.MessageID != want.MessageID ||
		got.Sender != want.Sender || got.Text != want.Text || !got.Direct || got.Mentioned || got.ThreadID != "" ||
		!got.Time.Equal(want.Time) {
		t.Fatalf("message:\n got %+v\nwant %+v", got, want)
	}
	f.WaitAcked(t, env, wait)
	if got.Target().String() != "slack:DU100" {
		t.Fatalf("session key = %q, want slack:DU100 (DMs stay flat)", got.Target())
	}

	ts, err := r.c.Send(context.Background(), channels.Outgoing{Target: got.Target(), Text: "*Hi* Ada", ReplyTo: got.MessageID})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	posts := f.WaitPosted(t, 1, wait)
	if p := posts[0]; p.Channel != "DU100" || p.Text != "*Hi* Ada" || p.ThreadTS != "" || p.TS != ts {
		t.Fatalf("posted %+v, want text %q in DU100 (no thread) with ts %s", p, "*Hi* Ada", ts)
	}

	if err := r.c.Edit(context.Background(), got.Target(), ts, "*Hi* Ada, how can I help?"); err != nil {
		t.Fatalf("Edit: %v", err)
	}
	up := f.WaitUpdated(t, 1, wait)[0]
	if up.Channel != "DU100" || up.TS != ts || up.Text != "*Hi* Ada, how can I help?" {
		t.Fatalf("update %+v", up)
	}
}

func TestChannelMentionThreadsAndDedupKey(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	r := start(t, f, testOptions(f), newRecorder())

	m, envs := f.UserMentions("C200", "U1", "<@"+f.BotUserID()+"> what's the weather?")
	msgs := r.sink.waitN(t, 2)
	for i, got := range msgs {
		if got.MessageID != "C200:"+m.TS {
			t.Errorf("event %d: MessageID %q, want %q (same for message and app_mention)", i, got.MessageID, "C200:"+m.TS)
		}
		if !got.Mentioned || got.Direct {
			t.Errorf("event %d: Mentioned=%v Direct=%v, want mentioned channel message", i, got.Mentioned, got.Direct)
		}
		if got.ThreadID != m.TS {
			t.Errorf("event %d: ThreadID %q, want the mention's ts %q", i, got.ThreadID, m.TS)
		}
		if got.Text != "what's the weather?" {
			t.Errorf("event %d: Text %q, want mention stripped", i, got.Text)
		}
	}
	for _, env := range envs {
		f.WaitAcked(t, env, wait)
	}
	if key := msgs[0].Target().String(); key != "slack:C200:"+m.TS {
		t.Fatalf("session key %q", key)
	}
	if _, err := r.c.Send(context.Background(), channels.Outgoing{Target: msgs[0].Target(), Text: "Sunny."}); err != nil {
		t.Fatal(err)
	}
	if p := f.WaitPosted(t, 1, wait)[0]; p.Channel != "C200" || p.ThreadTS != m.TS {
		t.Fatalf("answer %+v, want it in thread %s of C200", p, m.TS)
	}
}

func TestMentionPairFirstArrivalCarriesFlags(t *testing.T) {
	for _, order := range []string{"message first", "app_mention first"} {
		t.Run(order, func(t *testing.T) {
			f := fakeslack.New(t, fakeslack.Options{})
			r := start(t, f, testOptions(f), newRecorder())
			m := fakeslack.Message{Channel: "C300", User: "U1", Text: "hey " + f.Mention() + " ping", TS: f.NextTS()}
			if order == "message first" {
				f.SendEvent(m.Event())
				f.SendEvent(m.AppMention())
			} else {
				f.SendEvent(m.AppMention())
				f.SendEvent(m.Event())
			}
			msgs := r.sink.waitN(t, 2)
			if msgs[0].MessageID != msgs[1].MessageID {
				t.Fatalf("MessageIDs differ: %q vs %q", msgs[0].MessageID, msgs[1].MessageID)
			}
			first := msgs[0]
			if !first.Mentioned || first.ThreadID != m.TS || first.Text != "hey ping" {
				t.Fatalf("first delivered: Mentioned=%v ThreadID=%q Text=%q; want true, %q, %q",
					first.Mentioned, first.ThreadID, first.Text, m.TS, "hey ping")
			}
		})
	}
}

func TestMessageShapes(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	flat := false
	opts := testOptions(f)
	opts.ThreadReplies = &flat
	r := start(t, f, opts, newRecorder())

	plain, _ := f.UserSays("C400", "U1", "just chatting")
	root := f.NextTS()
	reply, _ := f.UserRepliesInThread("C400", root, "U2", "in a thread")
	mention, _ := f.UserMentions("C400", "U3", "flat please")
	msgs := r.sink.waitN(t, 4)

	tests := []struct {
		name string
		got  channels.Message
		want channels.Message
	}{
		{"channel message without mention", msgs[0], channels.Message{MessageID: "C400:" + plain.TS, Text: "just chatting"}},
		{"thread reply", msgs[1], channels.Message{MessageID: "C400:" + reply.TS, ThreadID: root, ReplyTo: "C400:" + root, Text: "in a thread"}},
		{"mention with ThreadReplies off", msgs[2], channels.Message{MessageID: "C400:" + mention.TS, Mentioned: true, Text: "flat please"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.got
			if g.MessageID != tt.want.MessageID || g.ThreadID != tt.want.ThreadID || g.ReplyTo != tt.want.ReplyTo ||
				g.Mentioned != tt.want.Mentioned || g.Text != tt.want.Text || g.Direct || g.ChatID != "C400" {
				t.Fatalf("got %+v\nwant %+v", g, tt.want)
			}
		})
	}
}

func TestRedeliveredEnvelopeKeepsMessageID(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	r := start(t, f, testOptions(f), newRecorder())
	_, env := f.UserDMs("U1", "are you there?")
	f.WaitAcked(t, env, wait)
	retry := f.Redeliver(env)
	msgs := r.sink.waitN(t, 2)
	if msgs[0].MessageID != msgs[1].MessageID || msgs[0].Text != msgs[1].Text {
		t.Fatalf("redelivery produced %q / %q, want the same MessageID", msgs[0].MessageID, msgs[1].MessageID)
	}
	f.WaitAcked(t, retry, wait)
}

func TestAckOnlyAfterHandleReturns(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	sink := newRecorder()
	sink.block = make(chan struct{})
	sink.entered = make(chan struct{}, 1)
	start(t, f, testOptions(f), sink)

	_, env := f.UserDMs("U1", "persist me first")
	select {
	case <-sink.entered:
	case <-time.After(wait):
		t.Fatal("Handle was never called")
	}
	// Handle is running (the inbox write, in the real handler). Hold it a
	// little so an early ack would have time to reach the server.
	time.Sleep(50 * time.Millisecond)
	if un := f.Unacked(); !slices.Contains(un, env) {
		t.Fatalf("envelope %s acked while Handle was still running (acks=%v)", env, f.Acks())
	}
	released := time.Now()
	close(sink.block)
	f.WaitAcked(t, env, wait)
	if ack := f.Acks()[0]; ack.At.Before(released) {
		t.Fatalf("ack read at %v, before Handle was released at %v", ack.At, released)
	}
}

func TestHandleErrorLeavesEnvelopeUnacked(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	sink := newRecorder()
	sink.fail = func(m channels.Message) error {
		if m.Text == "disk full" {
			return errors.New("inbox write failed")
		}
		return nil
	}
	start(t, f, testOptions(f), sink)

	_, bad := f.UserDMs("U1", "disk full")
	_, good := f.UserDMs("U1", "second")
	f.WaitAcked(t, good, wait) // envelopes are handled in order: the first is done
	if un := f.Unacked(); !slices.Equal(un, []string{bad}) {
		t.Fatalf("unacked = %v, want only %s (Handle failed for it)", un, bad)
	}
	// Slack redelivers it; this time Handle succeeds and it is acked.
	sink.mu.Lock()
	sink.fail = nil
	sink.mu.Unlock()
	retry := f.Redeliver(bad)
	f.WaitAcked(t, retry, wait)
}

func TestDisconnectReconnectsAndEventsStillArrive(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	r := start(t, f, testOptions(f), newRecorder())
	f.WaitConnections(t, 1, wait)
	waitReady(t, r.c)

	f.Disconnect("refresh_requested")
	f.WaitConnections(t, 2, wait)
	_, env := f.UserDMs("U1", "after the refresh")
	if got := r.sink.waitN(t, 1)[0]; got.Text != "after the refresh" {
		t.Fatalf("got %q", got.Text)
	}
	f.WaitAcked(t, env, wait)
	if ack := f.Acks()[0]; ack.Conn != 2 {
		t.Fatalf("ack on connection %d, want the new connection 2", ack.Conn)
	}
	if n := r.c.maxLiveConns.Load(); n != 1 {
		t.Fatalf("client held %d connections at once, want 1", n)
	}
	waitReady(t, r.c)
}

func TestDroppedConnectionReconnects(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	r := start(t, f, testOptions(f), newRecorder())
	f.WaitConnections(t, 1, wait)
	f.DropConnections()
	f.WaitConnections(t, 2, wait)
	_, env := f.UserDMs("U1", "still here")
	r.sink.waitN(t, 1)
	f.WaitAcked(t, env, wait)
}

func TestWatchdogReplacesConnectionWithoutHello(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	f.HoldHello(true) // connections come up, pings flow, but Slack never says hello
	r := start(t, f, testOptions(f), newRecorder())

	f.WaitConnections(t, 2, wait) // the watchdog gave up on the first one
	if r.c.Ready() {
		t.Fatal("Ready without a hello")
	}
	if n := r.c.maxLiveConns.Load(); n != 1 {
		t.Fatalf("client held %d connections at once, want the old one closed first", n)
	}
	f.HoldHello(false)
	waitReady(t, r.c)
	_, env := f.UserDMs("U1", "hello again")
	r.sink.waitN(t, 1)
	f.WaitAcked(t, env, wait)
}

func TestWatchdogReplacesSilentConnection(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	opts := testOptions(f)
	opts.PingInterval = time.Minute // socketmode's own ping check stays out of the way
	opts.WatchdogTimeout = 200 * time.Millisecond
	r := start(t, f, opts, newRecorder())
	f.WaitConnections(t, 1, wait)
	waitReady(t, r.c)

	f.StopPings(true) // hello was received; now nothing at all arrives
	f.WaitConnections(t, 2, wait)
	f.StopPings(false)
	_, env := f.UserDMs("U1", "back again")
	if got := r.sink.waitN(t, 1)[0]; got.Text != "back again" {
		t.Fatalf("got %q", got.Text)
	}
	f.WaitAcked(t, env, wait)
	if n := r.c.maxLiveConns.Load(); n != 1 {
		t.Fatalf("client held %d connections at once, want 1", n)
	}
}

func TestOwnAndNonTurnMessagesIgnored(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{EchoBotMessages: true})
	r := start(t, f, testOptions(f), newRecorder())

	if _, err := r.c.Send(context.Background(), channels.Outgoing{Target: channels.Target{Channel: "slack", ChatID: "C1"}, Text: "I said this"}); err != nil {
		t.Fatal(err)
	}
	edited := fakeslack.Message{Channel: "C1", User: "U1", Text: "edited", TS: f.NextTS(), SubType: "message_changed"}
	joined := fakeslack.Message{Channel: "C1", User: "U1", Text: "<@U1> has joined the channel", TS: f.NextTS(), SubType: "channel_join"}
	envs := []string{f.SendEvent(edited.Event()), f.SendEvent(joined.Event())}
	other := fakeslack.Message{Channel: "C1", User: "U9", BotID: "BOTHER", Text: "another bot", TS: f.NextTS()}
	f.SendEvent(other.Event())
	_, last := f.UserDMs("U1", "real message")

	f.WaitAcked(t, last, wait)
	for _, env := range envs {
		f.WaitAcked(t, env, wait)
	}
	f.WaitAllAcked(t, wait) // the echo of our own post included
	msgs := r.sink.all()
	if len(msgs) != 2 || msgs[0].Text != "another bot" || !msgs[0].Sender.IsBot || msgs[1].Text != "real message" {
		t.Fatalf("sink saw %+v; want only the other bot's message (IsBot) and the real one", msgs)
	}
}

func TestImagesDownloadedAndCapped(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	opts := testOptions(f)
	opts.MaxMediaBytes = 64
	r := start(t, f, opts, newRecorder())

	small := f.AddFile(fakeslack.File{ID: "F1", Name: "cat.png", Mimetype: "image/png", Data: []byte("\x89PNG tiny cat")})
	big := f.AddFile(fakeslack.File{ID: "F2", Name: "huge.png", Mimetype: "image/png", Data: []byte(strings.Repeat("x", 65))})
	doc := f.AddFile(fakeslack.File{ID: "F3", Name: "notes.pdf", Mimetype: "application/pdf", Data: []byte("%PDF")})
	m := fakeslack.Message{Channel: fakeslack.DMChannel("U1"), User: "U1", Text: "look", TS: f.NextTS(),
		Files: []map[string]any{small, big, doc}}
	f.SendEvent(m.Event())

	got := r.sink.waitN(t, 1)[0]
	if len(got.Media) != 1 || got.Media[0].Name != "cat.png" || got.Media[0].MIME != "image/png" ||
		string(got.Media[0].Data) != "\x89PNG tiny cat" {
		t.Fatalf("media = %+v, want only the small image", got.Media)
	}
	for _, d := range f.Downloads() {
		if !d.Authorized {
			t.Fatalf("download of %s without the bot token", d.FileID)
		}
		if d.FileID != "F1" {
			t.Fatalf("downloaded %s, which should have been skipped", d.FileID)
		}
	}
}

func TestRunReportsRejectedCredentials(t *testing.T) {
	tests := []struct {
		name    string
		script  func(f *fakeslack.Server)
		opts    func(o *Options)
		wantErr []string
	}{
		{"invalid bot token", func(f *fakeslack.Server) { f.SetAuthError("invalid_auth", "") }, nil,
			[]string{"slack: the bot token was rejected (invalid_auth): check SLACK_BOT_TOKEN"}},
		{"missing scope", func(f *fakeslack.Server) { f.SetAuthError("missing_scope", "users:read") }, nil,
			[]string{`lacks the OAuth scope "users:read"`}},
		{"wrong app token", nil, func(o *Options) { o.AppToken = "xapp-wrong" },
			[]string{"slack: the app-level token was rejected (invalid_auth): check SLACK_APP_TOKEN"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fakeslack.New(t, fakeslack.Options{})
			if tt.script != nil {
				tt.script(f)
			}
			opts := testOptions(f)
			if tt.opts != nil {
				tt.opts(&opts)
			}
			c, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			err = c.Run(ctx, newRecorder())
			if err == nil {
				t.Fatal("Run returned nil, want the credential error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
			for _, secret := range []string{f.BotToken(), f.AppToken(), "xapp-wrong"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error leaks a token: %q", err)
				}
			}
		})
	}
}

func TestReadyFollowsConnection(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	c, err := New(testOptions(f))
	if err != nil {
		t.Fatal(err)
	}
	if c.Ready() {
		t.Fatal("ready before Run")
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx, newRecorder()) }()
	waitReady(t, c)
	if got := c.BotUserID(); got != f.BotUserID() {
		t.Fatalf("BotUserID = %q", got)
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("Run did not return after cancel")
	}
	if c.Ready() {
		t.Fatal("still ready after Run returned")
	}
	if n := c.liveConns.Load(); n != 0 {
		t.Fatalf("%d connections left open after Run returned", n)
	}
}

func TestAssistantThreadStatusAsTyping(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	r := start(t, f, testOptions(f), newRecorder())

	ch, thread, env := f.AssistantThreadStarted("U1")
	f.WaitAcked(t, env, wait)
	stop := r.c.StartTyping(context.Background(), channels.Target{Channel: "slack", ChatID: ch, ThreadID: thread})
	stop()
	stop() // idempotent
	st := f.Statuses()
	if len(st) != 2 || st[0] != (fakeslack.Status{Channel: ch, ThreadTS: thread, Status: typingStatus}) ||
		st[1] != (fakeslack.Status{Channel: ch, ThreadTS: thread, Status: ""}) {
		t.Fatalf("statuses = %+v, want set then cleared once", st)
	}

	// Outside an assistant thread nothing is posted.
	r.c.StartTyping(context.Background(), channels.Target{Channel: "slack", ChatID: "C1"})()
	if n := f.Calls("assistant.threads.setStatus") + f.Calls("chat.postMessage"); n != 2 {
		t.Fatalf("%d calls, want no new call for a plain channel", n-2)
	}
}
