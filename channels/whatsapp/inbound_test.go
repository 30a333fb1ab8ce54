package whatsapp

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakewhatsapp"
)

// A text message becomes a direct message of the user's E.164 number.
func TestInboundText(t *testing.T) {
	fake, _, s, _ := running(t, fakewhatsapp.Options{})
	d := fake.UserSays(t, ada, "hi there")
	m := s.wait(t, 1)[0]
	want := channels.Message{Channel: "whatsapp", ChatID: "+4915112345678", MessageID: d.IDs[0],
		Sender: channels.Sender{ID: "+4915112345678", Name: "Ada"}, Text: "hi there", Direct: true, Time: m.Time}
	if m.Target().String() != "whatsapp:+4915112345678" || m.UserKey() != "whatsapp:user:+4915112345678" {
		t.Errorf("target %s, user %s; want whatsapp:+4915112345678 and whatsapp:user:+4915112345678", m.Target(), m.UserKey())
	}
	if m.Channel != want.Channel || m.ChatID != want.ChatID || m.MessageID != want.MessageID || m.Sender != want.Sender ||
		m.Text != want.Text || !m.Direct || m.Mentioned || m.Time.IsZero() {
		t.Errorf("got %+v\nwant %+v", m, want)
	}
}

// Media of every kind arrive in Media with their bytes; a voice note is audio.
func TestInboundMedia(t *testing.T) {
	fake, _, s, _ := running(t, fakewhatsapp.Options{})
	pdf := []byte("%PDF-1.4 a small document")
	ogg := []byte("OggS voice bytes")
	cases := []struct {
		typ, mime, caption, filename string
		data                         []byte
		voice                        bool
	}{
		{"image", "image/jpeg", "look", "", []byte{0xff, 0xd8, 0xff, 1, 2, 3}, false},
		{"audio", "audio/ogg; codecs=opus", "", "", ogg, true},
		{"document", "application/pdf", "the report", "report.pdf", pdf, false},
	}
	for _, tc := range cases {
		fake.Send(ada, fake.Media(ada, tc.typ, tc.mime, tc.data, tc.caption, tc.filename, tc.voice)).Wait(t, 20*time.Second)
	}
	msgs := s.wait(t, len(cases))
	for i, tc := range cases {
		m := msgs[i]
		if len(m.Media) != 1 {
			t.Fatalf("%s: %d attachments, want 1: %+v", tc.typ, len(m.Media), m)
		}
		if !bytes.Equal(m.Media[0].Data, tc.data) || m.Media[0].MIME != tc.mime || m.Media[0].Name != tc.filename || m.Text != tc.caption {
			t.Errorf("%s: got media %q %q %q text %q", tc.typ, m.Media[0].MIME, m.Media[0].Name, m.Media[0].Data, m.Text)
		}
	}
}

// An attachment over the limit, one whose checksum does not match, and one
// whose URL is on a host the token must not go to are dropped with a note
// in Text (the user still gets an answer); the token never leaves.
func TestInboundMediaRefused(t *testing.T) {
	var leaked atomic.Int32
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
	}))
	defer evil.Close()

	t.Run("too large", func(t *testing.T) {
		fake, _, s, _ := running(t, fakewhatsapp.Options{}, func(o *Options) { o.MaxMediaBytes = 100 })
		fake.Send(ada, fake.Media(ada, "document", "application/pdf", bytes.Repeat([]byte("x"), 1000), "read this", "big.pdf", false)).Wait(t, 20*time.Second)
		m := s.wait(t, 1)[0]
		if len(m.Media) != 0 || !strings.HasPrefix(m.Text, "read this\n[the user sent a document that could not be received: it is 1000 bytes, more than the 100 bytes allowed]") {
			t.Errorf("got media %d, text %q", len(m.Media), m.Text)
		}
		if n := fake.Requests("GET download"); n != 0 {
			t.Errorf("%d download(s) of a file announced as too large", n)
		}
	})
	t.Run("bad checksum", func(t *testing.T) {
		fake, _, s, _ := running(t, fakewhatsapp.Options{})
		msg := fake.Media(ada, "image", "image/png", []byte("png bytes"), "", "", false)
		msg["image"].(map[string]any)["sha256"] = strings.Repeat("ab", 32)
		fake.Send(ada, msg).Wait(t, 20*time.Second)
		m := s.wait(t, 1)[0]
		if len(m.Media) != 0 || !strings.Contains(m.Text, "checksum") {
			t.Errorf("got media %d, text %q", len(m.Media), m.Text)
		}
	})
	t.Run("foreign host", func(t *testing.T) {
		fake, _, s, _ := running(t, fakewhatsapp.Options{MediaURL: evil.URL})
		fake.Send(ada, fake.Media(ada, "image", "image/png", []byte("png bytes"), "see", "", false)).Wait(t, 20*time.Second)
		m := s.wait(t, 1)[0]
		if len(m.Media) != 0 || !strings.Contains(m.Text, "unexpected host") {
			t.Errorf("got media %d, text %q", len(m.Media), m.Text)
		}
		if leaked.Load() != 0 {
			t.Error("the access token was sent to a host that is neither HTTPS nor the API's")
		}
	})
}

// A reply carries the replied-to id; a timestamp sent as a JSON number (as
// some Business API versions do) is read like the documented string.
func TestInboundReplyAndNumericTimestamp(t *testing.T) {
	fake, _, s, _ := running(t, fakewhatsapp.Options{})
	reply := fake.Text(ada, "yes, that one")
	reply["context"] = map[string]any{"from": "15550001234", "id": "wamid.BOT00000001"}
	num := fake.Text(ada, "numeric time")
	num["timestamp"] = time.Now().Unix()
	fake.Send(ada, reply, num).Wait(t, 20*time.Second)
	msgs := s.wait(t, 2)
	if msgs[0].ReplyTo != "wamid.BOT00000001" || !msgs[0].Mentioned {
		t.Errorf("reply: ReplyTo %q Mentioned %t", msgs[0].ReplyTo, msgs[0].Mentioned)
	}
	if msgs[1].Text != "numeric time" || msgs[1].Time.IsZero() {
		t.Errorf("numeric timestamp: got %+v", msgs[1])
	}
}

// Reactions and unsupported messages are not handed on; status callbacks
// (a failed 131047 among them) never become messages.
func TestInboundIgnored(t *testing.T) {
	fake, _, s, _ := running(t, fakewhatsapp.Options{})
	reaction := fake.Text(ada, "")
	reaction["type"], reaction["reaction"] = "reaction", map[string]any{"message_id": "wamid.X", "emoji": "👍"}
	delete(reaction, "text")
	unsupported := fake.Text(ada, "")
	unsupported["type"] = "unsupported"
	delete(unsupported, "text")
	fake.Send(ada, reaction, unsupported).Wait(t, 20*time.Second)
	fake.Post(fake.StatusPayload("wamid.BOT1", ada.WaID, "failed", 131047)).Wait(t, 20*time.Second)
	fake.UserSays(t, ada, "after")
	if msgs := s.wait(t, 1); len(msgs) != 1 || msgs[0].Text != "after" {
		t.Fatalf("got %+v", msgs)
	}
}
