package slack

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakeslack"
)

const secret = "8f742231b10e8888abcd99yyyzzz85a5"

// httpMode runs the adapter in HTTP mode behind a loopback server mounted at
// its WebhookPattern, with the clock fixed at now.
func httpMode(t *testing.T, f *fakeslack.Server, now time.Time, sink *recorder) (*running, string) {
	t.Helper()
	opts := testOptions(f)
	opts.Mode, opts.AppToken, opts.SigningSecret = ModeHTTP, "", secret
	opts.Now = func() time.Time { return now }
	r := start(t, f, opts, sink)
	waitReady(t, r.c)
	mux := http.NewServeMux()
	mux.Handle(r.c.WebhookPattern(), r.c.WebhookHandler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return r, srv.URL + "/webhooks/slack/events"
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHTTPModeSignedEvents(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	now := time.Unix(1_700_000_000, 0)
	sink := newRecorder()
	r, url := httpMode(t, f, now, sink)

	m := fakeslack.Message{Channel: "DU7", User: "U7", Text: "over http", TS: f.NextTS()}
	body, _ := f.EventCallback(m.Event())

	tests := []struct {
		name       string
		req        func() *http.Request
		wantStatus int
		wantSink   int // messages the sink has seen after the request
	}{
		{"bad signature", func() *http.Request {
			return fakeslack.SignedRequest(url, "not-the-secret", now, body)
		}, http.StatusUnauthorized, 0},
		{"stale timestamp", func() *http.Request {
			return fakeslack.SignedRequest(url, secret, now.Add(-6*time.Minute), body)
		}, http.StatusUnauthorized, 0},
		{"timestamp from the future", func() *http.Request {
			return fakeslack.SignedRequest(url, secret, now.Add(6*time.Minute), body)
		}, http.StatusUnauthorized, 0},
		{"unsigned", func() *http.Request {
			req := fakeslack.SignedRequest(url, secret, now, body)
			req.Header.Del("X-Slack-Signature")
			return req
		}, http.StatusUnauthorized, 0},
		{"body tampered after signing", func() *http.Request {
			req := fakeslack.SignedRequest(url, secret, now, body)
			tampered := strings.Replace(string(body), "over http", "over HTTP", 1)
			req.Body = io.NopCloser(strings.NewReader(tampered))
			req.ContentLength = int64(len(tampered))
			return req
		}, http.StatusUnauthorized, 0},
		{"valid signature within the window", func() *http.Request {
			return fakeslack.SignedRequest(url, secret, now.Add(-4*time.Minute), body)
		}, http.StatusOK, 1},
		{"redelivery with X-Slack-Retry-Num", func() *http.Request {
			req := fakeslack.SignedRequest(url, secret, now, body)
			req.Header.Set("X-Slack-Retry-Num", "1")
			req.Header.Set("X-Slack-Retry-Reason", "http_timeout")
			return req
		}, http.StatusOK, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _ := do(t, tt.req())
			if status != tt.wantStatus {
				t.Fatalf("status %d, want %d", status, tt.wantStatus)
			}
			if n := len(sink.all()); n != tt.wantSink {
				t.Fatalf("sink saw %d messages, want %d", n, tt.wantSink)
			}
		})
	}
	msgs := sink.all()
	if msgs[0].MessageID != "DU7:"+m.TS || msgs[1].MessageID != msgs[0].MessageID || !msgs[0].Direct || msgs[0].Text != "over http" {
		t.Fatalf("messages %+v", msgs)
	}
	if !r.c.Ready() {
		t.Fatal("HTTP mode should be ready while running")
	}
}

func TestHTTPModeURLVerificationAndFailures(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	now := time.Unix(1_700_000_000, 0)
	sink := newRecorder()
	sink.fail = func(channels.Message) error { return errors.New("bolt: database is closed") }
	_, url := httpMode(t, f, now, sink)

	status, body := do(t, fakeslack.SignedRequest(url, secret, now, fakeslack.URLVerificationBody("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P")))
	var got struct{ Challenge string }
	if status != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil || got.Challenge != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Fatalf("url_verification: %d %q", status, body)
	}

	// An unsigned url_verification is refused like anything else.
	req := fakeslack.SignedRequest(url, "wrong", now, fakeslack.URLVerificationBody("x"))
	if status, _ := do(t, req); status != http.StatusUnauthorized {
		t.Fatalf("unsigned url_verification: %d, want 401", status)
	}

	// Handle failed (not persisted): 500 so Slack retries.
	ev, _ := f.EventCallback(fakeslack.Message{Channel: "DU1", User: "U1", Text: "x", TS: f.NextTS()}.Event())
	if status, _ := do(t, fakeslack.SignedRequest(url, secret, now, ev)); status != http.StatusInternalServerError {
		t.Fatalf("Handle error: status %d, want 500", status)
	}

	// Our own message is acknowledged without reaching the sink.
	own, _ := f.EventCallback(fakeslack.Message{Channel: "C1", User: f.BotUserID(), BotID: f.BotID(), Text: "me", TS: f.NextTS()}.Event())
	if status, _ := do(t, fakeslack.SignedRequest(url, secret, now, own)); status != http.StatusOK {
		t.Fatalf("own message: status %d, want 200", status)
	}
	if n := len(sink.all()); n != 1 {
		t.Fatalf("sink saw %d messages, want only the failed one", n)
	}
}

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
