package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/time/rate"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// Issue 13 defect 13: a server that answers every sendMessage with
// {"ok":false} (no error_code) was treated as temporary, so each reply was
// retried for half a minute and then dropped. A refusal is permanent; only
// 5xx and 420 are retried.
func TestOkFalseAnswersClassified(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		body     string
		wantKind channels.SendErrorKind
		wantText string
	}{
		{"ok false without a code", http.StatusOK, `{"ok":false,"description":"sending is disabled for this bot"}`, channels.KindPermanent, "sending is disabled for this bot"},
		{"ok false only", http.StatusOK, `{"ok":false}`, channels.KindPermanent, "error response from telegram"},
		{"unlisted 4xx", 418, `{"ok":false,"error_code":418,"description":"I'm a teapot"}`, channels.KindPermanent, "teapot"},
		{"bad gateway", http.StatusBadGateway, `{"ok":false,"error_code":502,"description":"Bad Gateway"}`, channels.KindTemporary, "Bad Gateway"},
		{"flood 420", 420, `{"ok":false,"error_code":420,"description":"Flood"}`, channels.KindTemporary, "Flood"},
		{"server error", 500, `{"ok":false,"error_code":500,"description":"Internal Server Error"}`, channels.KindTemporary, "Internal Server Error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				fmt.Fprint(w, c.body)
			}))
			defer srv.Close()
			ch, err := New(Options{Token: faketelegram.DefaultToken, APIURL: srv.URL, PerChatRate: rate.Inf, GlobalRate: rate.Inf})
			if err != nil {
				t.Fatal(err)
			}
			_, err = ch.Send(context.Background(), channels.Outgoing{Target: channels.Target{Channel: "telegram", ChatID: "42"}, Text: "hi"})
			if kind, _ := channels.ClassifyError(err); kind != c.wantKind {
				t.Errorf("classified %v, want %v (err %v)", kind, c.wantKind, err)
			}
			if err == nil || !strings.Contains(err.Error(), c.wantText) || strings.Contains(err.Error(), faketelegram.DefaultToken) {
				t.Errorf("error %v should carry %q and not the token", err, c.wantText)
			}
		})
	}
}

// closedIdle fails every request the way net/http does when it picked a
// kept-alive connection the server had already closed: nothing was written.
type closedIdle struct{}

func (closedIdle) RoundTrip(r *http.Request) (*http.Response, error) {
	// Drain the multipart body first: the library's body writer goroutine
	// formats the error while the library rewrites it (a race of the library
	// that -race reports when the body is abandoned).
	_, _ = io.Copy(io.Discard, r.Body)
	return nil, errors.New("http: server closed idle connection")
}

// The flake of TestSendErrorClassification: a send on a kept-alive connection
// the server had closed was classified ambiguous, but the request was never
// written, so it is temporary (safe to retry).
func TestServerClosedIdleConnectionIsTemporary(t *testing.T) {
	ch, err := New(Options{Token: faketelegram.DefaultToken, APIURL: "http://127.0.0.1:1", PerChatRate: rate.Inf, GlobalRate: rate.Inf,
		HTTPClient: &http.Client{Transport: closedIdle{}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ch.Send(context.Background(), channels.Outgoing{Target: channels.Target{Channel: "telegram", ChatID: "42"}, Text: "hi"})
	if kind, _ := channels.ClassifyError(err); kind != channels.KindTemporary {
		t.Errorf("server closed idle connection classified %v, want temporary: %v", kind, err)
	}
}
