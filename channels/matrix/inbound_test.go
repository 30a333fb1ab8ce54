package matrix

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakematrix"
)

// waitLong bounds waits for what a test caused (a hang detector).
const waitLong = 20 * time.Second

// waitMsgs waits until the sink holds a message with text and returns all.
func waitMsgs(t *testing.T, fake *fakematrix.Server, rec *recorder, text string) []channels.Message {
	t.Helper()
	var got []channels.Message
	fake.WaitFor(t, waitLong, "the message "+text, func() bool {
		got = rec.all()
		return len(withText(got, text)) > 0
	})
	return got
}

// How events become messages: direct rooms, mention gating, threads,
// replies, notices, edits.
func TestNormalizedMessages(t *testing.T) {
	fake := newFake(t, fakematrix.Options{})
	fake.SetDisplayName(alice, "Alice A.")
	logs := &syncBuffer{}
	a, err := New(testOptions(fake, nil, logs))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	running(t, a, rec)

	botEv := fake.UserSays(groupRoom, fake.UserID(), "an earlier answer", fakematrix.AsNotice())
	root := fake.UserSays(groupRoom, alice, "thread root")
	tests := []struct {
		name  string
		post  func() string // posts, returns the text the sink should see
		check func(t *testing.T, m channels.Message)
	}{
		{"direct room", func() string { fake.UserSays(dmRoom, alice, "hi in private"); return "hi in private" },
			func(t *testing.T, m channels.Message) {
				if !m.Direct || m.ChatID != dmRoom || m.Sender.ID != alice || m.Mentioned {
					t.Errorf("got %+v", m)
				}
			}},
		{"group without mention", func() string { fake.UserSays(groupRoom, bob, "just talking"); return "just talking" },
			func(t *testing.T, m channels.Message) {
				if m.Direct || m.Mentioned {
					t.Errorf("got %+v", m)
				}
			}},
		{"m.mentions pill stripped", func() string { fake.UserMentions(groupRoom, alice, "what time is it?"); return "what time is it?" },
			func(t *testing.T, m channels.Message) {
				if !m.Mentioned || m.Sender.Name != "Alice A." {
					t.Errorf("got %+v", m)
				}
			}},
		{"legacy body mention (no m.mentions)", func() string {
			fake.Raw(groupRoom, alice, "m.room.message", json.RawMessage(`{"msgtype":"m.text","body":"Switchboard, are you there?"}`))
			return "are you there?"
		}, func(t *testing.T, m channels.Message) {
			if !m.Mentioned {
				t.Errorf("got %+v", m)
			}
		}},
		{"@room is no mention", func() string {
			fake.Raw(groupRoom, alice, "m.room.message", json.RawMessage(`{"msgtype":"m.text","body":"@room lunch","m.mentions":{"room":true}}`))
			return "@room lunch"
		}, func(t *testing.T, m channels.Message) {
			if m.Mentioned {
				t.Errorf("got %+v", m)
			}
		}},
		{"reply to the bot, fallback stripped", func() string {
			fake.UserSays(groupRoom, alice, "> <@switchboard:fake.test> an earlier answer\n\nand why?",
				fakematrix.ReplyTo(botEv.EventID, fake.UserID()))
			return "and why?"
		}, func(t *testing.T, m channels.Message) {
			if !m.Mentioned || m.ReplyTo != botEv.EventID {
				t.Errorf("got %+v", m)
			}
		}},
		{"thread", func() string {
			fake.UserMentions(groupRoom, alice, "in the thread", fakematrix.InThread(root.EventID))
			return "in the thread"
		}, func(t *testing.T, m channels.Message) {
			if m.ThreadID != root.EventID || !m.Mentioned {
				t.Errorf("got %+v", m)
			}
			want := "matrix:" + groupRoom + ":" + root.EventID
			if m.Target().String() != want {
				t.Errorf("target %s, want %s", m.Target(), want)
			}
			if back, ok := channels.ParseTarget(want); !ok || back != m.Target() {
				t.Errorf("ParseTarget(%q) = %+v, %v", want, back, ok)
			}
		}},
		{"notice is a bot's", func() string { fake.UserSays(groupRoom, bob, "I am a bot", fakematrix.AsNotice()); return "I am a bot" },
			func(t *testing.T, m channels.Message) {
				if !m.Sender.IsBot {
					t.Errorf("got %+v", m)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := tc.post()
			msgs := waitMsgs(t, fake, rec, text)
			got := withText(msgs, text)
			if len(got) != 1 {
				t.Fatalf("%d messages with %q", len(got), text)
			}
			if got[0].MessageID == "" || got[0].Channel != Name || got[0].Time.IsZero() {
				t.Errorf("incomplete message %+v", got[0])
			}
			tc.check(t, got[0])
		})
	}
	// An edit is not a new message; the bot's own notice never arrived.
	fake.Raw(groupRoom, alice, "m.room.message", json.RawMessage(`{"msgtype":"m.text","body":"* edited","m.new_content":{"msgtype":"m.text","body":"edited"},"m.relates_to":{"rel_type":"m.replace","event_id":"`+root.EventID+`"}}`))
	fake.UserSays(groupRoom, alice, "after the edit")
	msgs := waitMsgs(t, fake, rec, "after the edit")
	for _, m := range msgs {
		if strings.Contains(m.Text, "edited") || m.Sender.ID == fake.UserID() {
			t.Errorf("unexpected message %+v", m)
		}
	}
}

// Attack: malformed events (content of the wrong shape, no event id, a
// body that is a number) are skipped; they neither wedge the sync nor
// reach the sink, and the next message arrives.
func TestMalformedEventsSkipped(t *testing.T) {
	fake := newFake(t, fakematrix.Options{})
	a, err := New(testOptions(fake, nil, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	running(t, a, rec)
	for _, c := range []string{`{"msgtype":"m.text","body":42}`, `[]`, `{"msgtype":"m.image","url":"https://evil.example/x.jpg","body":"x"}`,
		`{"msgtype":"m.text","body":"x","m.relates_to":"nonsense"}`} {
		fake.Raw(dmRoom, alice, "m.room.message", json.RawMessage(c))
	}
	fake.UserSays(dmRoom, alice, "still here")
	msgs := waitMsgs(t, fake, rec, "still here")
	for _, m := range msgs {
		if m.Text != "still here" && m.Text != "" {
			t.Errorf("a malformed event reached the sink: %+v", m)
		}
		if len(m.Media) > 0 {
			t.Errorf("an attachment from a non-mxc URL was fetched: %+v", m)
		}
	}
}

// Attack: an attachment larger than the limit (announced or not) is
// dropped, the caption still arrives; within the limit it arrives intact
// through the authenticated media endpoint.
func TestMediaLimit(t *testing.T) {
	fake := newFake(t, fakematrix.Options{})
	opts := testOptions(fake, nil, &syncBuffer{})
	opts.MaxMediaBytes = 1000
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	running(t, a, rec)
	fake.UserSendsImage(dmRoom, alice, "small one", "image/png", make([]byte, 900))
	fake.UserSendsImage(dmRoom, alice, "huge one", "image/png", make([]byte, 5000))
	// A client lying about the size: the body is cut while reading.
	mxc := fake.Upload("image/png", make([]byte, 3000))
	fake.Raw(dmRoom, alice, "m.room.message", json.RawMessage(`{"msgtype":"m.image","body":"lying one","filename":"a.png","url":"`+mxc+`","info":{"mimetype":"image/png","size":10}}`))
	msgs := waitMsgs(t, fake, rec, "lying one")
	for text, n := range map[string]int{"small one": 1, "huge one": 0, "lying one": 0} {
		got := withText(msgs, text)
		if len(got) != 1 || len(got[0].Media) != n {
			t.Errorf("%q: %d messages, want 1 with %d attachment(s): %+v", text, len(got), n, got)
		}
	}
	if len(fake.Requests("/_matrix/client/v1/media/download/")) == 0 {
		t.Error("no download through the authenticated media endpoint")
	}
}
