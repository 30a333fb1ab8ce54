package slack

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
