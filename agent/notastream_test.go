package agent

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A proxy in front of the model that answers 200 with its login page: the
// error names what came back (the operator's clue), and it stays
// transient, so the turn fails over or retries as for an outage.
func TestHTMLAnswerIsNotAStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<html><body>Please sign in to the corporate proxy</body></html>"))
	}))
	t.Cleanup(srv.Close)
	p := NewProvider(Options{BaseURL: srv.URL + "/v1", APIKey: "k", MaxRetries: -1})
	_, err := p.Chat(context.Background(), ChatRequest{Model: "m"}, StreamObserver{})
	var me *ModelError
	if !errors.As(err, &me) {
		t.Fatalf("err = %v, want a *ModelError", err)
	}
	if !me.Transient() {
		t.Errorf("an HTML page instead of a stream is permanent (%s); want transient, so a fallback is tried", me.Kind)
	}
	if msg := err.Error(); !strings.Contains(msg, "text/html") || !strings.Contains(msg, "not an event stream") {
		t.Errorf("err = %q, want it to say the endpoint answered text/html, not an event stream", msg)
	}
}
