// Package fakesearch is a fake web search server for tests. One server
// speaks both providers web_search supports, on 127.0.0.1
// (net/http/httptest):
//
//   - Brave Search API: GET /res/v1/web/search?q=…&count=N with the header
//     X-Subscription-Token; answers {"web":{"results":[{"title","url","description"}]}}.
//     A token other than Server.Key is answered 401 (as Brave does).
//     Point the tool at BraveURL().
//   - SearXNG: GET /search?q=…&format=json; answers
//     {"results":[{"title","url","content"}]}; without format=json it
//     answers 403 (as an instance with the JSON API disabled does). Point
//     the tool at SearXNGURL() (the base URL).
//
// Results are the configured Results (all of them: the tool is expected to
// cap the count itself) unless Status is set (then that status is answered,
// with Retry-After when set) or Body is set (then it is answered as is).
// Every request is logged (Requests); the log and the settings are safe for
// concurrent use.
package fakesearch

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
)

// Result is one search result.
type Result struct{ Title, URL, Snippet string }

// Request is one logged request.
type Request struct {
	Path   string
	Query  string // q
	Count  string // count (Brave)
	Format string // format (SearXNG)
	Token  string // X-Subscription-Token
}

// Server is the fake.
type Server struct {
	*httptest.Server
	// Key is the Brave subscription token accepted.
	Key string

	mu         sync.Mutex
	results    []Result
	status     int
	retryAfter int
	body       []byte
	reqs       []Request
}

// New starts a server accepting key; it is closed when the test ends if t
// is used with t.Cleanup(s.Close).
func New(key string, results ...Result) *Server {
	s := &Server{Key: key, results: results}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /res/v1/web/search", s.brave)
	mux.HandleFunc("GET /search", s.searx)
	s.Server = httptest.NewServer(mux)
	return s
}

// BraveURL is the Brave endpoint of the fake.
func (s *Server) BraveURL() string { return s.URL + "/res/v1/web/search" }

// SearXNGURL is the SearXNG base URL of the fake.
func (s *Server) SearXNGURL() string { return s.URL }

// SetResults replaces the results answered.
func (s *Server) SetResults(r ...Result) { s.mu.Lock(); s.results = r; s.mu.Unlock() }

// SetStatus makes every request answer status (0 = normal answers), with a
// Retry-After header of retryAfter seconds when > 0.
func (s *Server) SetStatus(status, retryAfter int) {
	s.mu.Lock()
	s.status, s.retryAfter = status, retryAfter
	s.mu.Unlock()
}

// SetBody makes every request answer body as is (nil = normal answers).
func (s *Server) SetBody(body []byte) { s.mu.Lock(); s.body = body; s.mu.Unlock() }

// Requests returns the request log.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

func (s *Server) record(r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, Request{Path: r.URL.Path, Query: q.Get("q"), Count: q.Get("count"),
		Format: q.Get("format"), Token: r.Header.Get("X-Subscription-Token")})
}

// answer writes a configured failure and reports whether it did; else it
// returns the results to answer.
func (s *Server) answer(w http.ResponseWriter) ([]Result, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status != 0 {
		if s.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(s.retryAfter))
		}
		http.Error(w, `{"error":"fake failure"}`, s.status)
		return nil, true
	}
	if s.body != nil {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.body)
		return nil, true
	}
	return append([]Result(nil), s.results...), false
}

func (s *Server) brave(w http.ResponseWriter, r *http.Request) {
	s.record(r)
	if r.Header.Get("X-Subscription-Token") != s.Key {
		http.Error(w, `{"type":"ErrorResponse","error":{"code":"SUBSCRIPTION_TOKEN_INVALID","status":401}}`, http.StatusUnauthorized)
		return
	}
	res, done := s.answer(w)
	if done {
		return
	}
	type item struct {
		Title       string `json:"title"`
		URL         string `json:"url"`
		Description string `json:"description"`
	}
	var out struct {
		Type string `json:"type"`
		Web  struct {
			Type    string `json:"type"`
			Results []item `json:"results"`
		} `json:"web"`
	}
	out.Type, out.Web.Type, out.Web.Results = "search", "search", []item{}
	for _, x := range res {
		out.Web.Results = append(out.Web.Results, item{x.Title, x.URL, x.Snippet})
	}
	writeJSON(w, out)
}

func (s *Server) searx(w http.ResponseWriter, r *http.Request) {
	s.record(r)
	res, done := s.answer(w)
	if done {
		return
	}
	if r.URL.Query().Get("format") != "json" {
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	type item struct {
		Title   string `json:"title"`
		URL     string `json:"url"`
		Content string `json:"content"`
		Engine  string `json:"engine"`
	}
	out := struct {
		Query   string `json:"query"`
		Results []item `json:"results"`
	}{Query: r.URL.Query().Get("q"), Results: []item{}}
	for _, x := range res {
		out.Results = append(out.Results, item{x.Title, x.URL, x.Snippet, "fake"})
	}
	writeJSON(w, out)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
