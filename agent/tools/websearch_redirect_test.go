package tools

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// internalJSON is what an internal service behind the daemon answers: it
// parses as both providers' search JSON, so a followed redirect would put
// it in front of the model.
const internalJSON = `{"results":[{"title":"INTERNAL-SECRET","url":"https://internal.example/","content":"admin panel"}],` +
	`"web":{"results":[{"title":"INTERNAL-SECRET","url":"https://internal.example/","description":"admin panel"}]}}`

// tokenLog records the X-Subscription-Token of every request a server got.
type tokenLog struct {
	mu     sync.Mutex
	tokens []string
}

func (l *tokenLog) add(tok string) { l.mu.Lock(); l.tokens = append(l.tokens, tok); l.mu.Unlock() }

func (l *tokenLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.tokens...)
}

// hostileBackend starts a search backend on 127.0.0.1 that answers its
// search endpoint with a 302 to target(r) (a target on its own origin is
// answered with results), and an internal service on another port of
// 127.0.0.1. It returns the backend's base URL, the internal service and
// the tokens the internal service received.
func hostileBackend(t *testing.T, target func(internal *site, r *http.Request) string) (backend *site, internal *site, seenTokens *tokenLog) {
	t.Helper()
	seenTokens = &tokenLog{}
	internal = newSite(t, func(w http.ResponseWriter, r *http.Request) {
		seenTokens.add(r.Header.Get("X-Subscription-Token"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, internalJSON)
	})
	backend = newSite(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved/search" || r.URL.Path == "/moved/res/v1/web/search" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"results":[{"title":"Moved result","url":"https://example.com/m","content":"fine"}],`+
				`"web":{"results":[{"title":"Moved result","url":"https://example.com/m","description":"fine"}]}}`)
			return
		}
		http.Redirect(w, r, target(internal, r), http.StatusFound)
	})
	return backend, internal, seenTokens
}

// Issue 27, break 1: a hostile or compromised search backend answering with
// a redirect to another address (another port on loopback, a name for it,
// an https upgrade) cannot make the daemon fetch it: the tool is refused
// with a clear error, not retried, and the internal service never gets a
// request. A redirect on the backend's own origin is still followed.
func TestWebSearchRedirectOffOriginRefused(t *testing.T) {
	for _, tt := range []struct {
		name     string
		provider string
		target   func(internal *site, r *http.Request) string
	}{
		{"searxng to another loopback port", ProviderSearXNG, func(in *site, r *http.Request) string {
			return in.URL + "/search?" + r.URL.RawQuery
		}},
		{"searxng to localhost", ProviderSearXNG, func(in *site, _ *http.Request) string {
			return in.at("localhost", "/admin.json")
		}},
		{"searxng to 127.0.0.2", ProviderSearXNG, func(in *site, _ *http.Request) string {
			return in.at("127.0.0.2", "/admin.json")
		}},
		{"brave to another loopback port", ProviderBrave, func(in *site, r *http.Request) string {
			return in.URL + "/res/v1/web/search?" + r.URL.RawQuery
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			backend, internal, _ := hostileBackend(t, tt.target)
			cfg := WebSearchConfig{Provider: tt.provider, URL: backend.URL}
			if tt.provider == ProviderBrave {
				cfg.URL, cfg.APIKey = backend.URL+"/res/v1/web/search", testBraveKey
			}
			got, _ := searchTurn(t, cfg, `{"query":"weather"}`)
			want := "web_search: " + map[string]string{ProviderBrave: "the Brave Search API", ProviderSearXNG: "the SearXNG instance"}[tt.provider] +
				" redirected to "
			if !strings.Contains(got, want) || !strings.Contains(got, "refused: web_search connects only to its configured endpoint "+backend.URL) ||
				!strings.Contains(got, `status="error"`) {
				t.Fatalf("tool result:\n%s\nwant a refusal containing %q", got, want)
			}
			if strings.Contains(got, "INTERNAL-SECRET") || strings.Contains(got, "attempts") {
				t.Fatalf("tool result:\n%s\nwant a refusal that is not retried and shows nothing of the target", got)
			}
			if n := len(internal.requests()); n != 0 {
				t.Fatalf("the internal service got %d requests: %+v", n, internal.requests())
			}
			if n := len(backend.requests()); n != 1 {
				t.Fatalf("the backend got %d requests, want 1 (a refusal is not retried)", n)
			}
		})
	}

	// A redirect within the configured origin is followed.
	backend, internal, _ := hostileBackend(t, func(_ *site, r *http.Request) string { return "/moved" + r.URL.Path + "?" + r.URL.RawQuery })
	got, _ := searchTurn(t, WebSearchConfig{Provider: ProviderSearXNG, URL: backend.URL}, `{"query":"weather"}`)
	if !strings.Contains(got, "1. Moved result\n   https://example.com/m") {
		t.Fatalf("same-origin redirect: tool result:\n%s", got)
	}
	if n := len(internal.requests()); n != 0 {
		t.Fatalf("the internal service got %d requests", n)
	}
}

// Issue 27, break 2: the Brave key is bound to the configured host. A fake
// Brave on 127.0.0.1 redirecting to a second server (same host, other port;
// or the same port under another name) must never hand that server the
// X-Subscription-Token; the model gets a clear error without the key.
func TestWebSearchBraveKeyNotSentAcrossRedirect(t *testing.T) {
	for _, tt := range []struct {
		name   string
		target func(internal *site, r *http.Request) string
	}{
		{"other port", func(in *site, r *http.Request) string { return in.URL + r.URL.Path + "?" + r.URL.RawQuery }},
		{"other host name", func(in *site, r *http.Request) string { return in.at("localhost", r.URL.Path) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			backend, internal, tokens := hostileBackend(t, tt.target)
			cfg := WebSearchConfig{Provider: ProviderBrave, URL: backend.URL + "/res/v1/web/search", APIKey: testBraveKey}
			got, logs := searchTurn(t, cfg, `{"query":"weather"}`)
			for _, tok := range tokens.all() {
				if tok != "" {
					t.Fatalf("the redirect target received the Brave key %q", tok)
				}
			}
			if n := len(internal.requests()); n != 0 {
				t.Fatalf("the redirect target got %d requests", n)
			}
			if !strings.Contains(got, "web_search: the Brave Search API redirected to ") || !strings.Contains(got, "refused") {
				t.Fatalf("tool result:\n%s\nwant a clear refusal", got)
			}
			if strings.Contains(got, testBraveKey) || strings.Contains(logs, testBraveKey) {
				t.Fatalf("the key leaked:\n%s\n%s", got, logs)
			}
		})
	}
}
