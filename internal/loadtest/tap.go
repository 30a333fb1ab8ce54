package loadtest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
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

// Tap watches a fake platform's HTTP API from inside the fake's own server
// (its Wrap option): it records, per token, when a successful bot message
// call first carried it. It used to be a reverse proxy in front of the
// fake; as a handler wrapper a send is one HTTP hop, as in production, and
// the harness's own CPU goes to the fakes rather than to proxying. A Tap is
// safe for concurrent use.
type Tap struct {
	url     string // the fake's base URL, set once the fake listens
	isSend  func(*http.Request) (create, ok bool)
	idOf    func(resp []byte) string
	onSight func(tok string, at time.Time)

	mu    sync.Mutex
	catch *Caught // armed by CatchNextCreate
	seen  map[string]*Sighting
	dups  []string                                  // see Repeats
	polls map[*http.Request]context.CancelCauseFunc // in-flight long polls (DropLongPolls)
	calls map[string]int                            // requests by method (the path's last element)
	poll  chan time.Time                            // armed by NextPoll
}

// newTap returns a tap for a fake whose handler is wrapped with Wrap.
// isSend classifies a request as a bot message call: ok = it is one,
// create = it makes a new message (rather than editing one); idOf reads the
// message id from the answer to a create.
func newTap(isSend func(*http.Request) (create, ok bool), idOf func([]byte) string) *Tap {
	return &Tap{isSend: isSend, idOf: idOf, seen: map[string]*Sighting{}, polls: map[*http.Request]context.CancelCauseFunc{},
		calls: map[string]int{}}
}

// URL is the base URL of the fake the tap watches (scheme://127.0.0.1:port).
func (t *Tap) URL() string { return t.url }

// Wrap is the fake's Options.Wrap: next is the fake's own handler.
func (t *Tap) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.serve(next, w, r) })
}

// sendRecorder buffers the answer to a send call or a long poll (a small
// JSON object, written at once) so the tap can look at it, or drop it,
// before the client sees it.
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
		cancel(errDropped)
	}
	return n
}

// Calls is how many requests the fake received, by method (the last
// element of the request path: "sendMessage", "getUpdates").
func (t *Tap) Calls() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.calls)
}

// NextPoll returns a channel that receives the arrival time of the next
// getUpdates call (the bot's first long poll after a start).
func (t *Tap) NextPoll() <-chan time.Time {
	ch := make(chan time.Time, 1)
	t.mu.Lock()
	t.poll = ch
	t.mu.Unlock()
	return ch
}

func (t *Tap) serve(next http.Handler, w http.ResponseWriter, r *http.Request) {
	method := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	t.mu.Lock()
	t.calls[method]++
	t.mu.Unlock()
	create, send := t.isSend(r)
	switch {
	case send:
		t.serveSend(next, w, r, create)
	case strings.HasSuffix(r.URL.Path, "/getUpdates"):
		t.serveLongPoll(next, w, r)
	default:
		next.ServeHTTP(w, r)
	}
}

// serveLongPoll runs a getUpdates call that DropLongPolls can break: its
// context is cancelled, and whatever the fake answers then is thrown away
// and the connection closed without an answer.
func (t *Tap) serveLongPoll(next http.Handler, w http.ResponseWriter, r *http.Request) {
	t.mu.Lock()
	if t.poll != nil {
		t.poll <- time.Now()
		t.poll = nil
	}
	t.mu.Unlock()
	ctx, cancel := context.WithCancelCause(r.Context())
	r = r.WithContext(ctx)
	t.mu.Lock()
	t.polls[r] = cancel
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.polls, r)
		t.mu.Unlock()
		cancel(nil)
	}()
	rec := &sendRecorder{header: http.Header{}, status: http.StatusOK}
	next.ServeHTTP(rec, r)
	if errors.Is(context.Cause(ctx), errDropped) {
		panic(http.ErrAbortHandler) // the client sees the connection break
	}
	rec.flushTo(w)
}

// serveSend runs a bot message call and records the tokens it carried.
func (t *Tap) serveSend(next http.Handler, w http.ResponseWriter, r *http.Request, create bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	// The answer of a send call is held back until the sighting is recorded:
	// a client that has its answer can rely on Sightings including it (the
	// flake of TestTapCountsDistinctPlatformMessages: recording after the
	// answer had gone out raced the test's next look).
	rec := &sendRecorder{header: http.Header{}, status: http.StatusOK}
	next.ServeHTTP(rec, r)
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
	var id string
	if create {
		id = t.idOf(rec.body.Bytes())
	}
	now := time.Now()
	t.mu.Lock()
	var fresh []string
	repeat := false
	for _, tok := range toks {
		s := t.seen[tok]
		if s == nil {
			s = &Sighting{First: now}
			t.seen[tok] = s
			fresh = append(fresh, tok)
		}
		if create {
			if id == "" || !s.ids[id] {
				repeat = repeat || s.Creates > 0
				s.Creates++
			}
			if id != "" {
				if s.ids == nil {
					s.ids = map[string]bool{}
				}
				s.ids[id] = true
			}
		}
	}
	if repeat {
		t.dups = append(t.dups, "message "+idText(id)+" with "+strings.Join(toks, ","))
	}
	cb := t.onSight
	caught := t.catch
	if !create {
		caught = nil
	}
	if caught != nil {
		t.catch = nil
	}
	t.mu.Unlock()
	if cb != nil {
		for _, tok := range fresh {
			cb(tok, now)
		}
	}
	if caught != nil {
		caught.Tokens = toks
		close(caught.Arrived)
		select { // the answer waits: the bot is killed before it arrives
		case <-caught.release:
		case <-r.Context().Done():
		}
	}
}

// Caught is a bot message call held by the tap: the platform has created
// the message, and its answer waits until Release (or the client's
// connection ends). A test kills the daemon in between, which is exactly the
// window DESIGN.md allows a duplicate in: a send that landed without a
// receipt.
type Caught struct {
	// Arrived is closed once a message was created and its answer held.
	Arrived chan struct{}
	// Tokens are the tokens the held message carried (read after Arrived).
	Tokens  []string
	release chan struct{}
	once    sync.Once
}

// Release lets the held answer go (to a connection that may be gone).
// It is idempotent.
func (c *Caught) Release() { c.once.Do(func() { close(c.release) }) }

// CatchNextCreate arms the tap: the next successful call that creates a
// message carrying a token is held (see Caught). Arming again replaces an
// armed catch that caught nothing.
func (t *Tap) CatchNextCreate() *Caught {
	c := &Caught{Arrived: make(chan struct{}), release: make(chan struct{})}
	t.mu.Lock()
	t.catch = c
	t.mu.Unlock()
	return c
}

// tokensIn returns the distinct tokens in body (matches of tokenRE, found
// by hand: this runs on every send of a load run).
func tokensIn(body []byte) []string {
	var out []string
	for i := 0; i < len(body); i++ {
		if body[i] != 'q' {
			continue
		}
		end, ok := tokenAt(body, i)
		if !ok {
			continue
		}
		if tok := string(body[i:end]); !slices.Contains(out, tok) {
			out = append(out, tok)
		}
		i = end - 1
	}
	return out
}

// tokenAt reports whether a token (q<digits>x<digits>z) starts at body[i],
// and where it ends.
func tokenAt(body []byte, i int) (end int, ok bool) {
	j := digitsEnd(body, i+1)
	if j == i+1 || j >= len(body) || body[j] != 'x' {
		return 0, false
	}
	k := digitsEnd(body, j+1)
	if k == j+1 || k >= len(body) || body[k] != 'z' {
		return 0, false
	}
	return k + 1, true
}

func digitsEnd(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
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

// Repeats lists the platform messages created carrying a token an earlier
// created message already carried: each is one reply the user saw twice.
// A resent chunk that answers two messages is one repeat, though both of
// its tokens have Creates 2; so a count of repeats, not of tokens, is what
// compares with the daemon's count of resends.
func (t *Tap) Repeats() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.dups)
}

func idText(id string) string {
	if id == "" {
		return "(no id)"
	}
	return id
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

// Message ids in the platforms' answers to a create call (Telegram's
// "message_id": N, Discord's message object, which starts with its "id",
// Slack's first "ts"), read without regexps.

func telegramID(b []byte) string { return valueAfter(b, `"message_id":`) }

func discordID(b []byte) string {
	b = bytes.TrimLeft(b, jsonSpace)
	if len(b) == 0 || b[0] != '{' {
		return ""
	}
	b = bytes.TrimLeft(b[1:], jsonSpace)
	if !bytes.HasPrefix(b, []byte(`"id":`)) {
		return ""
	}
	return valueAfter(b, `"id":`)
}

func slackID(b []byte) string { return valueAfter(b, `"ts":`) }

const jsonSpace = " \t\n\r\f"

// valueAfter returns the number after the first key in b (quoted or not:
// digits and dots), or "" when there is none.
func valueAfter(b []byte, key string) string {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return ""
	}
	b = bytes.TrimLeft(b[i+len(key):], jsonSpace)
	quoted := len(b) > 0 && b[0] == '"'
	if quoted {
		b = b[1:]
	}
	n := 0
	for n < len(b) && (b[n] >= '0' && b[n] <= '9' || b[n] == '.' && quoted) {
		n++
	}
	if n == 0 || quoted && (n == len(b) || b[n] != '"') {
		return ""
	}
	return string(b[:n])
}
