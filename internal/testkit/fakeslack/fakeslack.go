// Package fakeslack is a Slack Web API + Socket Mode server for tests. It speaks
// the wire format that slack-go/slack and its socketmode package expect, so the
// Slack adapter is exercised through the real client library.
//
// It is built on slack-go's slacktest.Server (the listener, routing and its
// lifecycle); the handlers Switchboard needs are registered as slacktest binders
// under /api/ (the design's api_url ends in /api/), because slacktest's own
// handlers answer at the root, speak RTM on /ws and do not script failures:
//
//   - auth.test (checks the bot token; scriptable invalid_auth / missing_scope
//     with Slack's "needed"/"provided" fields),
//   - apps.connections.open (checks the app-level token; returns a single-use
//     ws:// URL of /ws),
//   - chat.postMessage, chat.update, assistant.threads.setStatus (recorded;
//     scriptable 429 with Retry-After and {"ok":false,"error":"ratelimited"},
//     scriptable API errors),
//   - users.info for users added with AddUser,
//   - file downloads for url_private (Authorization: Bearer <bot token>; without
//     it the fake redirects to a sign-in page as files.slack.com does),
//   - /ws: Socket Mode. It sends {"type":"hello",...}, WebSocket pings every
//     PingInterval, events_api envelopes, disconnect requests, and records the
//     client's acks ({"envelope_id":"…"}).
//
// Envelopes sent while no connection is open are queued and flushed to the next
// connection after its hello, so a test can inject events before the adapter
// has connected. Unacked envelopes are redelivered only with
// Options.RetryUnacked (on the next connection's hello) or when a test calls
// Redeliver to play Slack's retry.
//
// Story helpers (UserDMs, UserMentions, Posted, WaitPosted, WaitAcked, …) make
// tests read like conversations; Sign / SignedRequest / EventCallback build
// Events API HTTP requests for the adapter's HTTP mode.
package fakeslack

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/switchboard-bot/switchboard/internal/testkit"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack/slacktest"
)

// Defaults used when Options leaves a field empty.
const (
	DefaultBotToken  = "xoxb-fake-bot-token"
	DefaultAppToken  = "xapp-fake-app-token"
	DefaultBotUserID = "UBOT0001"
	DefaultBotID     = "BBOT0001"
	DefaultTeamID    = "TFAKE001"
	DefaultAppID     = "AFAKE001"
)

// Options configures a Server. Zero values take the defaults above.
type Options struct {
	BotToken  string
	AppToken  string
	BotUserID string
	BotID     string
	TeamID    string
	AppID     string
	// PingInterval is how often the server pings each Socket Mode connection
	// (default 50ms, so clients with a sub-second ping timeout stay healthy).
	PingInterval time.Duration
	// EchoBotMessages makes every chat.postMessage also arrive as a `message`
	// event carrying the bot's user and bot_id, as Slack delivers a bot's own
	// posts to apps subscribed to message events.
	EchoBotMessages bool
	// RetryUnacked plays Slack's retry of unacknowledged envelopes: when a
	// connection says hello, each envelope sent on an earlier connection
	// and never acked is sent again (Redeliver), once.
	RetryUnacked bool
	// Wrap, when set, wraps each of the fake's HTTP handlers (Web API,
	// files, the Socket Mode upgrade): a load harness's tap watches the
	// bot's calls inside the fake's own server instead of as a second HTTP
	// hop.
	Wrap func(http.Handler) http.Handler
}

// Post is one recorded chat.postMessage or chat.update call.
type Post struct {
	Method   string // "chat.postMessage" or "chat.update"
	Channel  string
	TS       string // the message's ts (assigned for posts, the edited one for updates)
	ThreadTS string
	Text     string
	Form     url.Values // the full form, token removed
}

// Status is one recorded assistant.threads.setStatus call.
type Status struct {
	Channel  string
	ThreadTS string
	Status   string
}

// Ack is one envelope acknowledgement received on a Socket Mode connection.
type Ack struct {
	EnvelopeID string
	Conn       int // connection number, from 1
	Payload    json.RawMessage
	At         time.Time // when the server read it
}

// Download is one request for a file's url_private.
type Download struct {
	FileID     string
	Authorized bool
}

// File is a file the fake serves at its url_private.
type File struct {
	ID       string
	Name     string
	Mimetype string
	Data     []byte
}

type script struct {
	remaining  int
	errCode    string
	retryAfter int // >0: answer 429 with Retry-After
	status     int // HTTP status for errCode answers (default 200)
}

type envelope struct {
	id       string
	event    json.RawMessage // the event_callback payload
	attempt  int
	sentConn int
	retried  bool // RetryUnacked sent it again
}

type wsConn struct {
	n       int
	conn    *websocket.Conn
	writeMu sync.Mutex
	done    chan struct{}
	hello   bool
}

// Server is a running fake Slack.
type Server struct {
	opts Options
	ts   *slacktest.Server

	stopOnce sync.Once
	stop     chan struct{}
	wg       sync.WaitGroup

	mu           sync.Mutex
	changed      chan struct{}
	seq          int
	tsBase       int64 // Unix second the server started; the integer part of every ts
	authErr      string
	authNeeded   string
	openErr      string
	holdHello    bool
	noPings      bool
	scripts      map[string][]*script
	posts        []Post
	statuses     []Status
	calls        map[string]int
	users        map[string]string
	files        map[string]File
	downloads    []Download
	tickets      map[string]bool
	conns        map[int]*wsConn
	connSeq      int
	live         int
	maxLive      int
	pending      []*envelope
	envelopes    map[string]*envelope
	envelopeSent []string
	acks         []Ack
	uploads      uploadState // files the bot uploads (uploads.go)
}

// New starts a fake Slack on 127.0.0.1 and stops it when the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	s := Start(opts)
	t.Cleanup(s.Close)
	return s
}

// Start starts a fake Slack on 127.0.0.1; call Close to stop it.
func Start(opts Options) *Server {
	if opts.BotToken == "" {
		opts.BotToken = DefaultBotToken
	}
	if opts.AppToken == "" {
		opts.AppToken = DefaultAppToken
	}
	if opts.BotUserID == "" {
		opts.BotUserID = DefaultBotUserID
	}
	if opts.BotID == "" {
		opts.BotID = DefaultBotID
	}
	if opts.TeamID == "" {
		opts.TeamID = DefaultTeamID
	}
	if opts.AppID == "" {
		opts.AppID = DefaultAppID
	}
	if opts.PingInterval <= 0 {
		opts.PingInterval = 50 * time.Millisecond
	}
	s := &Server{tsBase: time.Now().Unix(),
		opts:      opts,
		stop:      make(chan struct{}),
		changed:   make(chan struct{}),
		scripts:   map[string][]*script{},
		calls:     map[string]int{},
		users:     map[string]string{},
		files:     map[string]File{},
		tickets:   map[string]bool{},
		conns:     map[int]*wsConn{},
		envelopes: map[string]*envelope{},
	}
	wrap := func(h http.HandlerFunc) http.HandlerFunc {
		if opts.Wrap == nil {
			return h
		}
		return opts.Wrap(h).ServeHTTP
	}
	s.ts = slacktest.NewTestServer(func(c slacktest.Customize) {
		c.Handle("/api/auth.test", wrap(s.handleAuthTest))
		c.Handle("/api/apps.connections.open", wrap(s.handleConnectionsOpen))
		c.Handle("/api/chat.postMessage", wrap(s.handlePostMessage))
		c.Handle("/api/chat.update", wrap(s.handleUpdate))
		c.Handle("/api/assistant.threads.setStatus", wrap(s.handleSetStatus))
		c.Handle("/api/users.info", wrap(s.handleUsersInfo))
		c.Handle("/api/conversations.history", wrap(s.handleHistory))
		c.Handle("/api/conversations.replies", wrap(s.handleHistory))
		c.Handle("/api/files.getUploadURLExternal", wrap(s.handleGetUploadURL)) // uploads.go
		c.Handle("/api/files.completeUploadExternal", wrap(s.handleCompleteUpload))
		c.Handle("/upload/", wrap(s.handleUploadBytes))
		c.Handle("/api/", wrap(s.handleUnknownMethod))
		c.Handle("/files-pri/", wrap(s.handleFile))
		c.Handle("/signin", wrap(s.handleSignin))
		c.Handle("/ws", wrap(s.handleWS))
	})
	s.ts.BotID = opts.BotUserID
	s.ts.Start()
	return s
}

// Close stops the server, its connections and goroutines. Idempotent.
func (s *Server) Close() {
	s.stopOnce.Do(func() {
		close(s.stop)
		s.mu.Lock()
		for _, c := range s.conns {
			_ = c.conn.Close()
		}
		s.mu.Unlock()
		s.ts.Stop()
		s.wg.Wait()
	})
}

// APIURL is the Web API base as slack.OptionAPIURL takes it ("http://127.0.0.1:N/api/").
func (s *Server) APIURL() string { return s.ts.GetAPIURL() + "api/" }

// BotToken returns the bot token the fake accepts.
func (s *Server) BotToken() string { return s.opts.BotToken }

// AppToken returns the app-level token the fake accepts.
func (s *Server) AppToken() string { return s.opts.AppToken }

// BotUserID returns the bot's user id (what auth.test reports as user_id).
func (s *Server) BotUserID() string { return s.opts.BotUserID }

// BotID returns the bot's bot id (auth.test bot_id).
func (s *Server) BotID() string { return s.opts.BotID }

// ---- scripting ----

// SetAuthError makes auth.test answer {"ok":false,"error":code} (with Slack's
// "needed" scope when code is missing_scope). An empty code restores success.
func (s *Server) SetAuthError(code, needed string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authErr, s.authNeeded = code, needed
}

// SetConnectionsOpenError makes apps.connections.open answer {"ok":false,"error":code}.
func (s *Server) SetConnectionsOpenError(code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.openErr = code
}

// HoldHello makes new Socket Mode connections receive pings but no hello and no
// events (a connection that is up but dead), until called with false.
func (s *Server) HoldHello(hold bool) {
	s.mu.Lock()
	s.holdHello = hold
	s.mu.Unlock()
	if !hold {
		s.mu.Lock()
		conns := s.liveConnsLocked()
		s.mu.Unlock()
		for _, c := range conns {
			s.mu.Lock()
			greeted := c.hello
			s.mu.Unlock()
			if !greeted {
				s.sendHello(c)
			}
		}
	}
}

// StopPings stops (true) or resumes (false) the WebSocket pings on every
// connection: with hello already sent, the connection goes silent.
func (s *Server) StopPings(stop bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noPings = stop
}

// RateLimitNext makes the next n calls of method (e.g. "chat.postMessage")
// answer HTTP 429 with Retry-After: retryAfter and {"ok":false,"error":"ratelimited"}.
func (s *Server) RateLimitNext(method string, n, retryAfter int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts[method] = append(s.scripts[method], &script{remaining: n, errCode: "ratelimited", retryAfter: retryAfter})
}

// FailNext makes the next n calls of method answer {"ok":false,"error":code}
// with HTTP status (0 means 200, as Slack answers API errors).
func (s *Server) FailNext(method string, n int, code string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts[method] = append(s.scripts[method], &script{remaining: n, errCode: code, status: status})
}

// AddUser makes users.info know a user.
func (s *Server) AddUser(id, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[id] = name
}

// AddFile stores a file and returns the JSON object Slack puts in a message's
// "files" array (url_private pointing at this server).
func (s *Server) AddFile(f File) map[string]any {
	s.mu.Lock()
	s.files[f.ID] = f
	s.mu.Unlock()
	u := s.ts.GetAPIURL() + "files-pri/" + s.opts.TeamID + "-" + f.ID + "/" + url.PathEscape(f.Name)
	return map[string]any{
		"id": f.ID, "name": f.Name, "title": f.Name, "mimetype": f.Mimetype,
		"filetype": strings.TrimPrefix(f.Mimetype, "image/"), "size": len(f.Data),
		"url_private": u, "url_private_download": u + "?download=1",
	}
}

// ---- reading what the bot did ----

// MaxLiveConnections returns the most Socket Mode connections that were open
// at the same time (as the server saw them).
func (s *Server) MaxLiveConnections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxLive
}

// Posts returns every chat.postMessage call, in order.
func (s *Server) Posts() []Post { return s.filterPosts("chat.postMessage", "") }

// Posted returns the chat.postMessage calls to one channel.
func (s *Server) Posted(channel string) []Post { return s.filterPosts("chat.postMessage", channel) }

// Messages returns the bot's messages in channel as they read now: each
// chat.postMessage, oldest first, with Text replaced by its last chat.update.
func (s *Server) Messages(channel string) []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Post
	at := map[string]int{}
	for _, p := range s.posts {
		if p.Channel != channel {
			continue
		}
		switch p.Method {
		case "chat.postMessage":
			at[p.TS] = len(out)
			out = append(out, p)
		case "chat.update":
			if i, ok := at[p.TS]; ok {
				out[i].Text = p.Text
			}
		}
	}
	return out
}

// Updates returns every chat.update call, in order.
func (s *Server) Updates() []Post { return s.filterPosts("chat.update", "") }

// Statuses returns every assistant.threads.setStatus call.
func (s *Server) Statuses() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.statuses)
}

// Calls returns how many times a Web API method was called (scripted failures included).
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// Downloads returns every url_private request.
func (s *Server) Downloads() []Download {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.downloads)
}

// Acks returns every envelope ack received, in order.
func (s *Server) Acks() []Ack {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.acks)
}

// Unacked returns the ids of envelopes sent to a client and not acked, in send order.
func (s *Server) Unacked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, id := range s.envelopeSent {
		if !s.ackedLocked(id) {
			out = append(out, id)
		}
	}
	return out
}

// Connections returns how many Socket Mode connections were accepted so far.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connSeq
}

// LiveConnections returns how many Socket Mode connections are open now (as
// the server sees them: a client's close is noticed when its read fails).
func (s *Server) LiveConnections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live
}

func (s *Server) filterPosts(method, channel string) []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Post
	for _, p := range s.posts {
		if p.Method == method && (channel == "" || p.Channel == channel) {
			out = append(out, p)
		}
	}
	return out
}

func (s *Server) ackedLocked(id string) bool {
	return slices.ContainsFunc(s.acks, func(a Ack) bool { return a.EnvelopeID == id })
}

// ---- waiting ----

// notifyLocked wakes every waiter; s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitFor waits until cond (evaluated with s.mu held) returns true, failing t
// on timeout.
func (s *Server) waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testkit.WaitUntil(t, timeout, 0, "fakeslack: "+what, func() (bool, <-chan struct{}) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return cond(), s.changed
	})
}

// WaitPosted waits until at least n chat.postMessage calls were recorded and returns them all.
func (s *Server) WaitPosted(t testing.TB, n int, timeout time.Duration) []Post {
	t.Helper()
	s.waitFor(t, timeout, fmt.Sprintf("%d posted messages", n), func() bool {
		c := 0
		for _, p := range s.posts {
			if p.Method == "chat.postMessage" {
				c++
			}
		}
		return c >= n
	})
	return s.Posts()
}

// WaitUpdated waits until at least n chat.update calls were recorded and returns them all.
func (s *Server) WaitUpdated(t testing.TB, n int, timeout time.Duration) []Post {
	t.Helper()
	s.waitFor(t, timeout, fmt.Sprintf("%d message updates", n), func() bool {
		c := 0
		for _, p := range s.posts {
			if p.Method == "chat.update" {
				c++
			}
		}
		return c >= n
	})
	return s.Updates()
}

// WaitAcked waits until the envelope was acked.
func (s *Server) WaitAcked(t testing.TB, envelopeID string, timeout time.Duration) {
	t.Helper()
	s.waitFor(t, timeout, "ack of envelope "+envelopeID, func() bool { return s.ackedLocked(envelopeID) })
}

// WaitAllAcked waits until every envelope sent so far was acked and none is
// queued for a connection.
func (s *Server) WaitAllAcked(t testing.TB, timeout time.Duration) {
	t.Helper()
	s.waitFor(t, timeout, "every envelope acked", func() bool {
		if len(s.pending) > 0 {
			return false
		}
		for _, id := range s.envelopeSent {
			if !s.ackedLocked(id) {
				return false
			}
		}
		return true
	})
}

// WaitConnections waits until at least n Socket Mode connections were accepted
// and the newest one is open and got its hello (unless hello is held).
func (s *Server) WaitConnections(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	s.waitFor(t, timeout, fmt.Sprintf("%d socket mode connections", n), func() bool {
		c, ok := s.conns[s.connSeq]
		return s.connSeq >= n && ok && (c.hello || s.holdHello)
	})
}

// ---- HTTP mode helpers ----

// Sign returns the headers Slack sends with an Events API request: the
// v0 HMAC-SHA256 signature of body under secret at time at.
func Sign(secret string, at time.Time, body []byte) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	_, _ = io.WriteString(mac, "v0:"+ts+":")
	_, _ = mac.Write(body)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Slack-Request-Timestamp", ts)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	return h
}

// SignedRequest builds a POST of body to target signed with secret at time at.
func SignedRequest(target, secret string, at time.Time, body []byte) *http.Request {
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(string(body)))
	if err != nil {
		panic(fmt.Sprintf("fakeslack: bad url %q: %v", target, err))
	}
	for k, v := range Sign(secret, at, body) {
		req.Header[k] = v
	}
	return req
}

// URLVerificationBody is the body Slack posts when an Events API URL is configured.
func URLVerificationBody(challenge string) []byte {
	b, _ := json.Marshal(map[string]any{"token": "fake-verification-token", "challenge": challenge, "type": "url_verification"})
	return b
}
