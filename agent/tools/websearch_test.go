package tools

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakesearch"
)

const testBraveKey = "BSA-test-key-9f8e7d6c"

func searchResults(n int) []fakesearch.Result {
	var out []fakesearch.Result
	for i := 1; i <= n; i++ {
		out = append(out, fakesearch.Result{Title: fmt.Sprintf("Result <b>%d</b>", i), URL: fmt.Sprintf("https://example.com/%d", i),
			Snippet: fmt.Sprintf("About <strong>go</strong> &amp; generics,\n part %d", i)})
	}
	return out
}

func newFakeSearch(t *testing.T, results ...fakesearch.Result) *fakesearch.Server {
	t.Helper()
	s := fakesearch.New(testBraveKey, results...)
	t.Cleanup(s.Close)
	return s
}

func searchConfig(s *fakesearch.Server, provider string, maxResults int) WebSearchConfig {
	cfg := WebSearchConfig{Provider: provider, MaxResults: maxResults, Timeout: 5 * time.Second}
	if provider == ProviderBrave {
		cfg.URL, cfg.APIKey = s.BraveURL(), testBraveKey
	} else {
		cfg.URL = s.SearXNGURL()
	}
	return cfg
}

// searchTurn runs one agent turn in which the model calls web_search with
// args, and returns what the model got back as the tool result and the
// logs of the tool and the agent.
func searchTurn(t *testing.T, cfg WebSearchConfig, args string) (result, logs string) {
	t.Helper()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&syncWriter{w: &buf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Logger = log
	tool, err := NewWebSearch(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg := agent.NewRegistry()
	if err := reg.Register(tool); err != nil {
		t.Fatal(err)
	}
	srv := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
		if len(r.ToolResults()) > 0 {
			return fakellm.Response{Content: "done"}
		}
		return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: NameWebSearch, Arguments: args}}}
	})
	a, err := agent.New(agent.Options{BaseURL: srv.URL, APIKey: "k", Model: "m", HTTPClient: srv.HTTPClient(),
		Tools: reg, Location: time.UTC, ToolRetries: 3, Logger: log,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.ProcessMessage(context.Background(), agent.Request{SessionKey: "s", Text: "search"}); err != nil {
		t.Fatal(err)
	}
	return srv.LastRequest().ToolResults()[0].Content, buf.String()
}

// syncWriter serializes writes (the tool and the agent log from several goroutines).
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Issue 16: web_search against fakes of both providers in a real agent
// turn: results as title, URL and snippet (HTML dropped), capped at
// max_results (or the smaller count asked for), the provider's request as
// its API wants it.
func TestWebSearchProviders(t *testing.T) {
	for _, tt := range []struct {
		provider, args string
		max, want      int
	}{
		{ProviderBrave, `{"query":"go   generics"}`, 3, 3},
		{ProviderSearXNG, `{"query":"go   generics"}`, 3, 3},
		{ProviderBrave, `{"query":"go generics","count":2}`, 5, 2},
		{ProviderSearXNG, `{"query":"go generics","count":9}`, 4, 4},
	} {
		t.Run(fmt.Sprintf("%s/%d", tt.provider, tt.want), func(t *testing.T) {
			fake := newFakeSearch(t, searchResults(25)...)
			got, logs := searchTurn(t, searchConfig(fake, tt.provider, tt.max), tt.args)
			want := fmt.Sprintf("Results for \"go generics\" (%s):\n1. Result 1\n   https://example.com/1\n   About go & generics, part 1\n2. Result 2", tt.provider)
			if !strings.Contains(got, want) {
				t.Fatalf("tool result:\n%s\nwant it to contain:\n%s", got, want)
			}
			if !strings.Contains(got, fmt.Sprintf("%d. Result %d", tt.want, tt.want)) || strings.Contains(got, fmt.Sprintf("%d. Result", tt.want+1)) {
				t.Fatalf("want exactly %d results:\n%s", tt.want, got)
			}
			reqs := fake.Requests()
			if len(reqs) != 1 || reqs[0].Query != "go generics" {
				t.Fatalf("requests = %+v", reqs)
			}
			if tt.provider == ProviderBrave && (reqs[0].Count != fmt.Sprint(tt.want) || reqs[0].Token != testBraveKey) {
				t.Fatalf("brave request = %+v", reqs[0])
			}
			if tt.provider == ProviderSearXNG && (reqs[0].Format != "json" || reqs[0].Token != "") {
				t.Fatalf("searxng request = %+v", reqs[0])
			}
			if strings.Contains(logs, testBraveKey) {
				t.Fatalf("the key is in the logs:\n%s", logs)
			}
		})
	}
}

// Issue 16: provider failures reach the model as tool errors: a refused
// key names the key problem without the key and is not retried; 429 and 5xx
// are retried; an oversized or malformed answer is refused. The key never
// appears in a result or a log.
func TestWebSearchErrors(t *testing.T) {
	for _, tt := range []struct {
		name       string
		provider   string
		key        string // brave key to send ("" = the right one)
		status     int
		retryAfter int
		body       []byte
		want       string
		wantHits   int
	}{
		{"brave key refused", ProviderBrave, "BSA-wrong-key-0000", 0, 0, nil,
			"error: web_search: the Brave Search API refused the API key (HTTP 401): check agent.web_search.api_key (BRAVE_API_KEY)", 1},
		{"brave forbidden", ProviderBrave, "", 403, 0, nil, "refused the API key (HTTP 403)", 1},
		{"searxng json disabled", ProviderSearXNG, "", 403, 0, nil, "the SearXNG instance refused the request (HTTP 403): its JSON API may be disabled", 1},
		{"rate limited", ProviderBrave, "", 429, 7, nil, "the Brave Search API is rate limited (HTTP 429); retry after 7 s (after 4 attempts)", 4},
		{"server error", ProviderSearXNG, "", 502, 0, nil, "the SearXNG instance answered 502 Bad Gateway (after 4 attempts)", 4},
		{"bad request", ProviderBrave, "", 422, 0, nil, "answered 422 Unprocessable Entity", 1},
		{"too large", ProviderSearXNG, "", 0, 0, bytes.Repeat([]byte(" "), 2048), "the answer of the SearXNG instance is larger than 1024 bytes", 1},
		{"not json", ProviderBrave, "", 0, 0, []byte("<html>oops</html>"), "answered something that is not its search JSON", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeSearch(t, searchResults(3)...)
			fake.SetStatus(tt.status, tt.retryAfter)
			fake.SetBody(tt.body)
			cfg := searchConfig(fake, tt.provider, 5)
			cfg.MaxBytes = 1024
			if tt.key != "" {
				cfg.APIKey = tt.key
			}
			got, logs := searchTurn(t, cfg, `{"query":"weather"}`)
			if !strings.Contains(got, tt.want) || !strings.Contains(got, `status="error"`) {
				t.Fatalf("tool result:\n%s\nwant it to contain %q", got, tt.want)
			}
			if n := len(fake.Requests()); n != tt.wantHits {
				t.Fatalf("%d requests, want %d", n, tt.wantHits)
			}
			for _, secret := range []string{testBraveKey, tt.key} {
				if secret != "" && (strings.Contains(got, secret) || strings.Contains(logs, secret)) {
					t.Fatalf("the key %q leaked:\nresult: %s\nlogs: %s", secret, got, logs)
				}
			}
		})
	}
}

// A network failure names the provider, is retried, and its text (which
// quotes the request URL) carries no key or URL credentials.
func TestWebSearchUnreachable(t *testing.T) {
	fake := newFakeSearch(t)
	base := fake.SearXNGURL()
	fake.Close()
	cfg := WebSearchConfig{Provider: ProviderSearXNG, URL: strings.Replace(base, "http://", "http://admin:hunter2@", 1), Timeout: time.Second}
	got, logs := searchTurn(t, cfg, `{"query":"x"}`)
	if !strings.Contains(got, "web_search: the SearXNG instance did not answer") || !strings.Contains(got, "(after 4 attempts)") {
		t.Fatalf("tool result: %s", got)
	}
	if strings.Contains(got, "hunter2") || strings.Contains(logs, "hunter2") {
		t.Fatalf("URL password leaked:\n%s\n%s", got, logs)
	}
}

func TestNewWebSearchConfig(t *testing.T) {
	for _, tt := range []struct {
		cfg  WebSearchConfig
		want string
	}{
		{WebSearchConfig{Provider: "google"}, `unknown provider "google" (brave or searxng)`},
		{WebSearchConfig{Provider: ProviderBrave}, "the brave provider needs an API key"},
		{WebSearchConfig{Provider: ProviderSearXNG}, "the searxng provider needs the instance's URL"},
		{WebSearchConfig{Provider: ProviderSearXNG, URL: "ftp://h"}, "must be an absolute http:// or https:// URL"},
		{WebSearchConfig{Provider: ProviderBrave, APIKey: testBraveKey, URL: "h/x?token=" + testBraveKey}, "must be an absolute"},
		{WebSearchConfig{Provider: ProviderBrave, APIKey: testBraveKey, MaxResults: 21}, "max_results must be between 1 and 20, got 21"},
		{WebSearchConfig{Provider: ProviderBrave, APIKey: testBraveKey, MaxResults: -1}, "max_results must be between 1 and 20, got -1"},
	} {
		_, err := NewWebSearch(tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewWebSearch(%s) = %v, want %q", tt.cfg.Provider, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), testBraveKey) {
			t.Errorf("error shows the key: %v", err)
		}
	}
	ws, err := NewWebSearch(WebSearchConfig{Provider: ProviderBrave, APIKey: testBraveKey})
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprintf("%v %+v %#v %s", ws, ws, ws, ws.Description()); strings.Contains(s, testBraveKey) {
		t.Fatalf("the tool prints its key: %s", s)
	}
	if ws.endpoint.String() != DefaultBraveURL || ws.cfg.MaxResults != DefaultSearchMaxResults {
		t.Fatalf("defaults: %s %d", ws.endpoint, ws.cfg.MaxResults)
	}
}
