package loadtest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
)

// tokenRE matches the per-message token the harness puts in every user
// message ("q<chat>x<seq>z"); the echo model repeats it in the reply.
var tokenRE = regexp.MustCompile(`q[0-9]+x[0-9]+z`)

// Token is the unique marker of message seq in chat.
func Token(chat, seq int) string {
	return "q" + itoa(chat) + "x" + itoa(seq) + "z"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// Sighting is what the tap saw of one token.
type Sighting struct {
	First time.Time // first successful send or edit carrying the token
	// Creates counts distinct platform messages created carrying the token
	// (by the message id the platform answered, so a Discord send answered
	// with the existing message through enforce_nonce counts once).
	Creates int
	ids     map[string]bool
}

// Tap is a reverse proxy in front of a fake platform's HTTP API that records,
// per token, when a successful bot message call first carried it. A Tap is
// safe for concurrent use.
type Tap struct {
	srv     *httptest.Server
	proxy   *httputil.ReverseProxy
	isSend  func(*http.Request) (create, ok bool)
	idOf    func(resp []byte) string
	onSight func(tok string, at time.Time)

	mu    sync.Mutex
	seen  map[string]*Sighting
	polls map[*http.Request]context.CancelFunc // in-flight long polls (DropLongPolls)
}

// newTap proxies to target (scheme://host:port). isSend classifies a request
// as a bot message call: ok = it is one, create = it makes a new message
// (rather than editing one).
func newTap(target string, isSend func(*http.Request) (create, ok bool), idOf func([]byte) string) (*Tap, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	t := &Tap{isSend: isSend, idOf: idOf, seen: map[string]*Sighting{}, polls: map[*http.Request]context.CancelFunc{}}
	t.proxy = httputil.NewSingleHostReverseProxy(u)
	t.proxy.Transport = &http.Transport{MaxIdleConnsPerHost: 512, IdleConnTimeout: 30 * time.Second}
	t.proxy.FlushInterval = -1 // long polls and streams pass through unbuffered
	t.proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, _ error) {
		if errors.Is(context.Cause(r.Context()), errDropped) {
			panic(http.ErrAbortHandler) // DropLongPolls: the client sees the connection break
		}
		w.WriteHeader(http.StatusBadGateway) // the daemon went away mid-call (kills, shutdown)
	}
	t.srv = httptest.NewServer(http.HandlerFunc(t.serve))
	return t, nil
}

// URL is the proxy's base URL (scheme://127.0.0.1:port).
func (t *Tap) URL() string { return t.srv.URL }

// Close stops the proxy.
func (t *Tap) Close() {
	t.srv.CloseClientConnections()
	t.srv.Close()
}

// sendRecorder buffers the answer to a send call (a small JSON object) so
// the tap can record it before the client sees it.
type sendRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (s *sendRecorder) Header() http.Header         { return s.header }
func (s *sendRecorder) WriteHeader(code int)        { s.status = code }
func (s *sendRecorder) Write(p []byte) (int, error) { return s.body.Write(p) }

// flushTo writes the buffered answer to w.
func (s *sendRecorder) flushTo(w http.ResponseWriter) {
	for k, v := range s.header {
		w.Header()[k] = v
	}
	w.WriteHeader(s.status)
	_, _ = w.Write(s.body.Bytes())
}

var errDropped = errors.New("loadtest: connection dropped")

// DropLongPolls breaks the connection of every in-flight Telegram getUpdates
// call, as a network failure would, and returns how many it broke.
func (t *Tap) DropLongPolls() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.polls)
	for r, cancel := range t.polls {
		delete(t.polls, r)
		cancel()
	}
	return n
}

func (t *Tap) serve(w http.ResponseWriter, r *http.Request) {
	create, send := t.isSend(r)
	if !send {
		if strings.HasSuffix(r.URL.Path, "/getUpdates") {
			ctx, cancel := context.WithCancelCause(r.Context())
			r = r.WithContext(ctx)
			t.mu.Lock()
			t.polls[r] = func() { cancel(errDropped) }
			t.mu.Unlock()
			defer func() {
				t.mu.Lock()
				delete(t.polls, r)
				t.mu.Unlock()
				cancel(nil)
			}()
		}
		t.proxy.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	// The answer of a send call is held back until the sighting is recorded:
	// a client that has its answer can rely on Sightings including it (the
	// flake of TestTapCountsDistinctPlatformMessages: recording after the
	// answer had gone out raced the test's next look).
	rec := &sendRecorder{header: http.Header{}, status: http.StatusOK}
	t.proxy.ServeHTTP(rec, r)
	defer rec.flushTo(w)
	if rec.status/100 != 2 {
		return
	}
	// Telegram and Discord answer errors with 4xx/5xx. Slack answers API
	// errors with 200 {"ok":false}; the harness scripts no Slack send
	// failures, so 2xx means delivered here.
	toks := tokensIn(body)
	if len(toks) == 0 {
		return
	}
	now := time.Now()
	t.mu.Lock()
	var fresh []string
	for _, tok := range toks {
		s := t.seen[tok]
		if s == nil {
			s = &Sighting{First: now, ids: map[string]bool{}}
			t.seen[tok] = s
			fresh = append(fresh, tok)
		}
		if create {
			id := t.idOf(rec.body.Bytes())
			if id == "" || !s.ids[id] {
				s.Creates++
			}
			if id != "" {
				s.ids[id] = true
			}
		}
	}
	cb := t.onSight
	t.mu.Unlock()
	if cb != nil {
		for _, tok := range fresh {
			cb(tok, now)
		}
	}
}

func tokensIn(body []byte) []string {
	all := tokenRE.FindAll(body, -1)
	if len(all) == 0 {
		return nil
	}
	out := make([]string, 0, len(all))
	seen := make(map[string]bool, len(all))
	for _, b := range all {
		s := string(b)
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Sightings returns a copy of what the tap saw.
func (t *Tap) Sightings() map[string]Sighting {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]Sighting, len(t.seen))
	for k, v := range t.seen {
		c := *v
		c.ids = nil
		out[k] = c
	}
	return out
}

// Platform request classifiers.

func telegramSend(r *http.Request) (bool, bool) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/sendMessage"):
		return true, true
	case strings.HasSuffix(r.URL.Path, "/editMessageText"):
		return false, true
	}
	return false, false
}

func discordSend(r *http.Request) (bool, bool) {
	if !strings.Contains(r.URL.Path, "/channels/") || !strings.Contains(r.URL.Path, "/messages") {
		return false, false
	}
	switch r.Method {
	case http.MethodPost:
		return true, true
	case http.MethodPatch:
		return false, true
	}
	return false, false
}

func slackSend(r *http.Request) (bool, bool) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/chat.postMessage"):
		return true, true
	case strings.HasSuffix(r.URL.Path, "/chat.update"):
		return false, true
	}
	return false, false
}

// Message ids in the platforms' answers to a create call.
var (
	telegramIDRE = regexp.MustCompile(`"message_id":\s*([0-9]+)`)
	discordIDRE  = regexp.MustCompile(`^\s*\{\s*"id":\s*"([0-9]+)"`)
	slackIDRE    = regexp.MustCompile(`"ts":\s*"([0-9.]+)"`)
)

func firstGroup(re *regexp.Regexp) func([]byte) string {
	return func(b []byte) string {
		m := re.FindSubmatch(b)
		if m == nil {
			return ""
		}
		return string(m[1])
	}
}
