package tools

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// A policy refusal is not retryable (issue 13, defect 12): in a real turn
// the model sees the refusal after one attempt, with no retry delay, while a
// server error is still retried.
func TestWebFetchRefusalNotRetried(t *testing.T) {
	var hits atomic.Int32
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/gone":
			http.NotFound(w, r)
		case "/to-private":
			http.Redirect(w, r, "http://10.0.0.1/", http.StatusFound)
		default:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}
	})
	res := newResolver(map[string]string{"intranet.test": "192.168.1.10"})
	guarded := WebFetchConfig{Resolver: res}
	// The test site is on loopback: let 127.0.0.0/8 through, the rest stays refused.
	siteOnly := WebFetchConfig{Resolver: res, AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	tests := []struct {
		name      string
		cfg       WebFetchConfig
		url       string
		wantErr   string
		wantTries int // attempts the tool made (ToolRetries is 3)
		wantHits  int32
	}{
		{"loopback refused", guarded, s.URL + "/", "refusing 127.0.0.1: loopback addresses are not allowed", 1, 0},
		{"private name refused", guarded, "http://intranet.test/", "refusing intranet.test (192.168.1.10): private addresses are not allowed", 1, 0},
		{"redirect to private refused", siteOnly, s.URL + "/to-private", "redirect to http://10.0.0.1/ refused: refusing 10.0.0.1: private addresses are not allowed", 1, 1},
		{"not found", siteOnly, s.URL + "/gone", "the server answered 404 Not Found", 1, 1},
		{"server error retried", siteOnly, s.URL + "/busy", "the server answered 503 Service Unavailable (after 4 attempts)", 4, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits.Store(0)
			tool := newFetch(t, tt.cfg)
			reg := agent.NewRegistry()
			if err := reg.Register(tool); err != nil {
				t.Fatal(err)
			}
			srv := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
				if len(r.ToolResults()) > 0 {
					return fakellm.Response{Content: "done"}
				}
				return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: NameWebFetch, Arguments: fmt.Sprintf(`{"url":%q}`, tt.url)}}}
			})
			var sleeps atomic.Int32
			a, err := agent.New(agent.Options{BaseURL: srv.URL, APIKey: "k", Model: "m", HTTPClient: srv.HTTPClient(),
				Tools: reg, Location: time.UTC, ToolRetries: 3,
				Sleep: func(ctx context.Context, _ time.Duration) error { sleeps.Add(1); return ctx.Err() }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.ProcessMessage(context.Background(), agent.Request{SessionKey: "s", Text: "fetch"}); err != nil {
				t.Fatal(err)
			}
			got := srv.LastRequest().ToolResults()[0].Content
			if !strings.Contains(got, tt.wantErr) {
				t.Fatalf("tool result %q, want %q", got, tt.wantErr)
			}
			if tt.wantTries == 1 && strings.Contains(got, "attempts") {
				t.Fatalf("refusal was retried: %q", got)
			}
			if int(sleeps.Load()) != tt.wantTries-1 {
				t.Fatalf("%d retry waits, want %d", sleeps.Load(), tt.wantTries-1)
			}
			if hits.Load() != tt.wantHits {
				t.Fatalf("site hit %d times, want %d", hits.Load(), tt.wantHits)
			}
		})
	}
}

func TestWebFetchErrorsClassified(t *testing.T) {
	f := newFetch(t, WebFetchConfig{Resolver: newResolver(nil)})
	tests := []struct {
		url       string
		permanent bool
	}{
		{"http://127.0.0.1/", true},
		{"ftp://example.com/", true},
		{"not a url", true},
		{"http://nowhere.test/", false}, // a failed lookup may pass next time
	}
	for _, tt := range tests {
		_, err := fetch(f, tt.url)
		var perm *agent.PermanentError
		if err == nil || errors.As(err, &perm) != tt.permanent {
			t.Errorf("fetch(%s): %v, permanent %v, want %v", tt.url, err, errors.As(err, &perm), tt.permanent)
		}
	}
}
