package slack

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakeslack"
)

type failingTransport struct{}

func (failingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("offline")
}

// FuzzWebhookPayload feeds arbitrary, correctly signed bodies to the HTTP
// handler: it must never panic, answer only with the statuses Slack expects,
// and hand the sink only well-formed messages.
func FuzzWebhookPayload(f *testing.F) {
	f.Add(`{"type":"url_verification","challenge":"abc"}`)
	f.Add(`{"type":"event_callback","event_id":"Ev1","event":{"type":"message","channel":"D1","user":"U1","text":"hi <@UBOT>","ts":"1.2","channel_type":"im"}}`)
	f.Add(`{"type":"event_callback","event":{"type":"app_mention","channel":"C1","user":"U1","text":"<@UBOT|bot> yo","ts":"1700000000.000001","thread_ts":"1700000000.000000"}}`)
	f.Add(`{"type":"event_callback","event":{"type":"message","subtype":"file_share","channel":"C1","user":"U1","ts":"1.1","files":[{"id":"F","mimetype":"image/png","url_private":"http://x/y"}]}}`)
	f.Add(`{"type":"event_callback","event":null}`)
	f.Add(`{"type":"app_rate_limited","minute_rate_limited":1}`)
	f.Add(`[]`)
	now := time.Unix(1_700_000_000, 0)
	c, err := New(Options{BotToken: "xoxb", Mode: ModeHTTP, SigningSecret: secret, Now: func() time.Time { return now },
		HTTPClient: &http.Client{Transport: failingTransport{}}})
	if err != nil {
		f.Fatal(err)
	}
	bot, botID := "UBOT", "BBOT"
	c.botUser.Store(&bot)
	c.botID.Store(&botID)
	var got []channels.Message
	c.sink = channels.SinkFunc(func(_ context.Context, m channels.Message) error {
		got = append(got, m)
		return nil
	})
	h := c.WebhookHandler()
	f.Fuzz(func(t *testing.T, body string) {
		got = got[:0]
		req := fakeslack.SignedRequest("http://127.0.0.1/webhooks/slack/events", secret, now, []byte(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest:
		default:
			t.Fatalf("status %d for %q", rec.Code, body)
		}
		for _, m := range got {
			if m.Channel != "slack" || m.ChatID == "" || !strings.HasPrefix(m.MessageID, m.ChatID+":") {
				t.Fatalf("malformed message %+v from %q", m, body)
			}
			if strings.Contains(m.Text, "<@UBOT>") || strings.Contains(m.Text, "<@UBOT|") {
				t.Fatalf("mention not stripped: %q", m.Text)
			}
			if utf8.ValidString(body) && !utf8.ValidString(m.Text) {
				t.Fatalf("text became invalid UTF-8: %q", m.Text)
			}
		}
	})
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
