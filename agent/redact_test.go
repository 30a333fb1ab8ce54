package agent

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// lockedBuf collects slog output from concurrent writers.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// closedPort is an address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Issue 13/14: a gateway key in the query of llm.base_url (?api-key=…) never
// shows in the model error, the retry log lines or the user's sentence: Go's
// HTTP errors keep the URL's query ("Post \"http://…?api-key=…\": dial tcp …").
func TestModelErrorsHideBaseURLQuerySecret(t *testing.T) {
	const secret = "SECRET-gw-4711"
	srv := fakellm.Start(t, func(*fakellm.Request) fakellm.Response { return fakellm.Response{Status: 500} })
	for _, tt := range []struct {
		name, base, kind string
	}{
		{"endpoint answers 500", srv.URL + "?api-key=" + secret, KindUnavailable},
		{"endpoint unreachable", "http://" + closedPort(t) + "/v1?api-key=" + secret, KindNetwork},
		{"token as user info, unreachable", "http://" + secret + "@" + closedPort(t) + "/v1", KindNetwork},
	} {
		t.Run(tt.name, func(t *testing.T) {
			logs := &lockedBuf{}
			h := newHarness(t, fakellm.Echo(), func(o *Options) {
				o.BaseURL, o.HTTPClient, o.MaxRetries = tt.base, nil, 1
				o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			})
			_, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "hi"})
			var me *ModelError
			if !errors.As(err, &me) || me.Kind != tt.kind || me.Attempts != 2 {
				t.Fatalf("want a %s ModelError after 2 attempts, got %v", tt.kind, err)
			}
			if tt.kind == KindNetwork {
				var uerr *url.Error // the chain is intact for classification
				if !errors.As(err, &uerr) {
					t.Fatalf("no *url.Error in the chain of %v", err)
				}
			}
			if !strings.Contains(logs.String(), "retrying") {
				t.Fatalf("no retry log line captured:\n%s", logs)
			}
			for what, text := range map[string]string{"error": err.Error(), "log": logs.String(), "friendly": FriendlyError(err)} {
				if strings.Contains(text, secret) {
					t.Errorf("%s shows the secret: %s", what, text)
				}
			}
		})
	}
	// The query still reaches the endpoint (gateways read it there).
	if n := srv.RequestCount(); n != 2 {
		t.Fatalf("the endpoint with the query got %d calls, want 2 (the path must stay /v1/chat/completions)", n)
	}
}
