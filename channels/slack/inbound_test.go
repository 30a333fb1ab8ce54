package slack

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakeslack"
)

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
	// The two messages are in different chats (C1 and the DM): parallel
	// intake hands them on in either order.
	msgs := r.sink.all()
	sort.Slice(msgs, func(i, j int) bool { return msgs[i].Text < msgs[j].Text })
	if len(msgs) != 2 || msgs[0].Text != "another bot" || !msgs[0].Sender.IsBot || msgs[1].Text != "real message" {
		t.Fatalf("sink saw %+v; want only the other bot's message (IsBot) and the real one", msgs)
	}
}

func TestFilesDownloadedAndCapped(t *testing.T) {
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
	if len(got.Media) != 2 || got.Media[0].Name != "cat.png" || got.Media[0].MIME != "image/png" ||
		string(got.Media[0].Data) != "\x89PNG tiny cat" ||
		got.Media[1].Name != "notes.pdf" || got.Media[1].MIME != "application/pdf" || string(got.Media[1].Data) != "%PDF" {
		t.Fatalf("media = %+v, want the small image and the document (issue 32)", got.Media)
	}
	for _, d := range f.Downloads() {
		if !d.Authorized {
			t.Fatalf("download of %s without the bot token", d.FileID)
		}
		if d.FileID != "F1" && d.FileID != "F3" {
			t.Fatalf("downloaded %s, which should have been skipped", d.FileID)
		}
	}
}

func FuzzStripMention(f *testing.F) {
	for _, s := range []string{"<@UBOT> hi", "hi <@UBOT|bot>, there", "<@UBOT><@UBOT>", "<@UBOT", "a\n<@UBOT>\n b", "<@UOTHER> x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		out := stripMention(text, "UBOT")
		if mentionRE("UBOT").MatchString(out) {
			t.Fatalf("stripMention(%q) = %q still mentions the bot", text, out)
		}
		if utf8.ValidString(text) && !utf8.ValidString(out) {
			t.Fatalf("stripMention(%q) produced invalid UTF-8", text)
		}
		if !mentionRE("UBOT").MatchString(text) && out != text {
			t.Fatalf("stripMention changed text without a mention: %q -> %q", text, out)
		}
	})
}

func TestStripMentionAndTS(t *testing.T) {
	for in, want := range map[string]string{
		"<@UBOT> what's up":          "what's up",
		"hey <@UBOT>, ping":          "hey, ping",
		"ping<@UBOT>now":             "ping now",
		"<@UBOT><@UBOT> twice":       "twice",
		"<@UBOT|switchboard>: help":  "help",
		"ask <@UOTHER> not me":       "ask <@UOTHER> not me",
		"line one\n<@UBOT> line two": "line one\nline two",
	} {
		if got := stripMention(in, "UBOT"); got != want {
			t.Errorf("stripMention(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]time.Time{
		"1700000000.000100": time.Unix(1700000000, 100_000).UTC(),
		"1700000000":        time.Unix(1700000000, 0).UTC(),
		"garbage":           {},
	} {
		if got := tsTime(in); !got.Equal(want) {
			t.Errorf("tsTime(%q) = %v, want %v", in, got, want)
		}
	}
}
