// Package fakematrix is an in-process Matrix homeserver (client-server API)
// for tests. It speaks the documented wire format
// (https://spec.matrix.org/v1.11/client-server-api/) on 127.0.0.1, so the
// real client library (maunium.net/go/mautrix) and the Switchboard adapter
// run against it unchanged:
//
//   - every endpoint needs `Authorization: Bearer <token>`; a wrong or
//     missing token answers 401 {"errcode":"M_UNKNOWN_TOKEN"|"M_MISSING_TOKEN"};
//     errors are {"errcode","error"} (429 adds "retry_after_ms");
//   - GET /_matrix/client/versions, GET /v3/account/whoami,
//     GET /v3/profile/{userId}/displayname;
//   - GET /v3/sync long polling: `since` tokens are positions in one event
//     stream ("s<n>"), so a since token given again returns the same events
//     again (how a client that did not persist its token after a crash
//     sees them); the initial sync (no since) returns each joined room's
//     last events, account data and pending invites; a room with more new
//     events than Options.TimelineLimit comes back `limited` with a
//     `prev_batch` token, the gap readable with GET /v3/rooms/{roomId}/messages
//     (dir=f, from, to, limit → chunk, end);
//   - PUT /v3/rooms/{roomId}/send/{eventType}/{txnId}: idempotent per access
//     token and txnId (the same event_id back, nothing posted twice);
//     content over 65536 bytes answers 413 M_TOO_LARGE;
//   - PUT /v3/rooms/{roomId}/typing/{userId} ({typing, timeout});
//   - POST /v3/rooms/{roomId}/join, POST /v3/join/{roomIdOrAlias},
//     POST /v3/rooms/{roomId}/leave (declining an invite),
//     GET /v3/rooms/{roomId}/joined_members;
//   - GET/PUT /v3/user/{userId}/account_data/{type} (m.direct), 404
//     M_NOT_FOUND when unset;
//   - GET /_matrix/client/v1/media/download/{serverName}/{mediaId}
//     (authenticated media); the legacy unauthenticated
//     /_matrix/media/v3/download is not served (404 M_UNRECOGNIZED), so a
//     client that still uses it fails here as on servers that froze it;
//   - scripted failures (FailNext) and dropped connections (DropConnections).
//
// Tests drive it like users would (drive.go): UserSays, UserMentions,
// UserSendsImage, Invite, Redeliver, Raw; and read what the bot did: Sent
// (edits applied), Typing, Joined, Left, AccountData, Requests.
package fakematrix

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Defaults of Options.
const (
	DefaultToken       = "syt_c3dpdGNoYm9hcmQ_FakeMatrixToken_0123456789"
	DefaultUserID      = "@switchboard:fake.test"
	DefaultDisplayName = "Switchboard"
	DefaultDeviceID    = "SWITCHBOARD1"
	ServerName         = "fake.test"
	// MaxEventBytes is the largest event content the server accepts.
	MaxEventBytes = 65536
)

// Options configures a Server; zero values take the defaults.
type Options struct {
	Token         string
	UserID        string
	DisplayName   string
	DeviceID      string
	TimelineLimit int // most timeline events per room in one sync; default 50
}

// Request is one API call the server received.
type Request struct {
	Method string // HTTP method
	Path   string // the unescaped path
	Query  map[string]string
	Body   json.RawMessage
}

// Failure is a scripted error answer.
type Failure struct {
	Status       int
	ErrCode      string
	Message      string
	RetryAfterMS int
}

// Server is the fake homeserver.
type Server struct {
	t    testing.TB
	opts Options
	srv  *httptest.Server

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change
	stream   []entry       // the event stream; a since token is an index into it
	rooms    map[string]*room
	txns     map[string]string // txnId → event_id
	seq      int               // event ids
	acct     map[string]json.RawMessage
	media    map[string]mediaFile
	typing   map[string]*typingState
	fails    map[string][]Failure // by endpoint name
	requests []Request
	names    map[string]string // user id → display name
}

type room struct {
	id        string
	joined    bool // the bot is a member
	left      bool // the bot declined or left
	encrypted bool
	members   []string
}

type mediaFile struct {
	mime string
	data []byte
}

type typingState struct {
	signals int
	on      bool
}

// New starts a server that lives until the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Token == "" {
		opts.Token = DefaultToken
	}
	if opts.UserID == "" {
		opts.UserID = DefaultUserID
	}
	if opts.DisplayName == "" {
		opts.DisplayName = DefaultDisplayName
	}
	if opts.DeviceID == "" {
		opts.DeviceID = DefaultDeviceID
	}
	if opts.TimelineLimit <= 0 {
		opts.TimelineLimit = 50
	}
	s := &Server{t: t, opts: opts, changed: make(chan struct{}), rooms: map[string]*room{},
		txns: map[string]string{}, acct: map[string]json.RawMessage{}, media: map[string]mediaFile{},
		typing: map[string]*typingState{}, fails: map[string][]Failure{},
		names: map[string]string{opts.UserID: opts.DisplayName}}
	s.srv = httptest.NewServer(s.routes())
	t.Cleanup(s.Close)
	return s
}

// URL is the homeserver's client-server base (channels.matrix.homeserver).
func (s *Server) URL() string { return s.srv.URL }

// Token is the accepted access token.
func (s *Server) Token() string { return s.opts.Token }

// UserID is the bot's user id.
func (s *Server) UserID() string { return s.opts.UserID }

// DisplayName is the bot's display name.
func (s *Server) DisplayName() string { return s.opts.DisplayName }

// Close stops the server.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// DropConnections cuts every open connection (a long poll in flight fails).
func (s *Server) DropConnections() { s.srv.CloseClientConnections() }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	h := func(pattern, name string, fn func(w http.ResponseWriter, r *http.Request, body []byte)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, name, fn) })
	}
	mux.HandleFunc("GET /_matrix/client/versions", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]any{"versions": []string{"v1.9", "v1.10", "v1.11"}})
	})
	h("GET /_matrix/client/v3/account/whoami", "whoami", s.whoami)
	h("GET /_matrix/client/v3/profile/{user}/displayname", "displayname", s.displayname)
	h("GET /_matrix/client/v3/sync", "sync", s.sync)
	h("GET /_matrix/client/v3/rooms/{room}/messages", "messages", s.messages)
	h("PUT /_matrix/client/v3/rooms/{room}/send/{type}/{txn}", "send", s.send)
	h("PUT /_matrix/client/v3/rooms/{room}/typing/{user}", "typing", s.typingCall)
	h("POST /_matrix/client/v3/rooms/{room}/join", "join", s.join)
	h("POST /_matrix/client/v3/join/{room}", "join", s.join)
	h("POST /_matrix/client/v3/rooms/{room}/leave", "leave", s.leave)
	h("GET /_matrix/client/v3/rooms/{room}/joined_members", "joined_members", s.joinedMembers)
	h("GET /_matrix/client/v3/user/{user}/account_data/{type}", "get_account_data", s.getAccountData)
	h("PUT /_matrix/client/v3/user/{user}/account_data/{type}", "put_account_data", s.putAccountData)
	h("GET /_matrix/client/v1/media/download/{server}/{media}", "download", s.download)
	mux.HandleFunc("POST /_matrix/media/v3/upload", s.upload) // uploads.go
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeErr(w, 404, "M_UNRECOGNIZED", "Unrecognized request")
	})
	return mux
}

// serve checks the token, records the request, applies a scripted failure
// and calls fn.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, name string, fn func(http.ResponseWriter, *http.Request, []byte)) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeErr(w, 400, "M_BAD_JSON", "unreadable body")
		return
	}
	auth := r.Header.Get("Authorization")
	switch {
	case auth == "":
		writeErr(w, 401, "M_MISSING_TOKEN", "Missing access token")
		return
	case auth != "Bearer "+s.opts.Token:
		writeErr(w, 401, "M_UNKNOWN_TOKEN", "Unknown access token")
		return
	}
	q := map[string]string{}
	for k, v := range r.URL.Query() {
		q[k] = v[0]
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: q, Body: json.RawMessage(body)})
	var fail *Failure
	if fs := s.fails[name]; len(fs) > 0 {
		fail = &fs[0]
		s.fails[name] = fs[1:]
	}
	s.notifyLocked()
	s.mu.Unlock()
	if fail != nil {
		if fail.RetryAfterMS > 0 {
			writeJSON(w, fail.Status, map[string]any{"errcode": fail.ErrCode, "error": fail.Message, "retry_after_ms": fail.RetryAfterMS})
			return
		}
		writeErr(w, fail.Status, fail.ErrCode, fail.Message)
		return
	}
	fn(w, r, body)
}

func (s *Server) whoami(w http.ResponseWriter, _ *http.Request, _ []byte) {
	writeJSON(w, 200, map[string]any{"user_id": s.opts.UserID, "device_id": s.opts.DeviceID})
}

func (s *Server) displayname(w http.ResponseWriter, r *http.Request, _ []byte) {
	s.mu.Lock()
	name, ok := s.names[r.PathValue("user")]
	s.mu.Unlock()
	if !ok {
		writeErr(w, 404, "M_NOT_FOUND", "Profile was not found")
		return
	}
	writeJSON(w, 200, map[string]any{"displayname": name})
}

// send posts the bot's event, once per txnId.
func (s *Server) send(w http.ResponseWriter, r *http.Request, body []byte) {
	roomID, typ, txn := r.PathValue("room"), r.PathValue("type"), r.PathValue("txn")
	if len(body) > MaxEventBytes {
		writeErr(w, 413, "M_TOO_LARGE", "event too large")
		return
	}
	var content map[string]any
	if err := json.Unmarshal(body, &content); err != nil {
		writeErr(w, 400, "M_NOT_JSON", "Content not JSON.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.txns[txn]; ok {
		writeJSON(w, 200, map[string]any{"event_id": id})
		return
	}
	rm := s.rooms[roomID]
	if rm == nil || !rm.joined {
		writeErr(w, 403, "M_FORBIDDEN", "User "+s.opts.UserID+" not in room "+roomID)
		return
	}
	id := s.appendLocked(roomID, s.opts.UserID, typ, json.RawMessage(body), nil)
	s.txns[txn] = id
	writeJSON(w, 200, map[string]any{"event_id": id})
}

func (s *Server) typingCall(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		Typing  bool  `json:"typing"`
		Timeout int64 `json:"timeout"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeErr(w, 400, "M_BAD_JSON", err.Error())
		return
	}
	if r.PathValue("user") != s.opts.UserID {
		writeErr(w, 403, "M_FORBIDDEN", "Cannot set another user's typing state")
		return
	}
	s.mu.Lock()
	ts := s.typing[r.PathValue("room")]
	if ts == nil {
		ts = &typingState{}
		s.typing[r.PathValue("room")] = ts
	}
	if req.Typing {
		ts.signals++
	}
	ts.on = req.Typing
	s.notifyLocked()
	s.mu.Unlock()
	writeJSON(w, 200, map[string]any{})
}

func (s *Server) join(w http.ResponseWriter, r *http.Request, _ []byte) {
	id := r.PathValue("room")
	s.mu.Lock()
	defer s.mu.Unlock()
	rm := s.rooms[id]
	if rm == nil {
		writeErr(w, 404, "M_NOT_FOUND", "No known servers")
		return
	}
	rm.joined, rm.left = true, false
	s.appendLocked(id, s.opts.UserID, "m.room.member", json.RawMessage(`{"membership":"join"}`), &s.opts.UserID)
	writeJSON(w, 200, map[string]any{"room_id": id})
}

func (s *Server) leave(w http.ResponseWriter, r *http.Request, _ []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rm := s.rooms[r.PathValue("room")]; rm != nil {
		rm.joined, rm.left = false, true
	}
	s.notifyLocked()
	writeJSON(w, 200, map[string]any{})
}

func (s *Server) joinedMembers(w http.ResponseWriter, r *http.Request, _ []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rm := s.rooms[r.PathValue("room")]
	if rm == nil || !rm.joined {
		writeErr(w, 403, "M_FORBIDDEN", "User not in room")
		return
	}
	joined := map[string]any{s.opts.UserID: map[string]any{"display_name": s.opts.DisplayName}}
	for _, m := range rm.members {
		joined[m] = map[string]any{"display_name": s.names[m]}
	}
	writeJSON(w, 200, map[string]any{"joined": joined})
}

func (s *Server) getAccountData(w http.ResponseWriter, r *http.Request, _ []byte) {
	if r.PathValue("user") != s.opts.UserID {
		writeErr(w, 403, "M_FORBIDDEN", "Cannot get account data for other users.")
		return
	}
	s.mu.Lock()
	data, ok := s.acct[r.PathValue("type")]
	s.mu.Unlock()
	if !ok {
		writeErr(w, 404, "M_NOT_FOUND", "Account data not found")
		return
	}
	writeJSON(w, 200, data)
}

func (s *Server) putAccountData(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.PathValue("user") != s.opts.UserID {
		writeErr(w, 403, "M_FORBIDDEN", "Cannot add account data for other users.")
		return
	}
	if !json.Valid(body) {
		writeErr(w, 400, "M_NOT_JSON", "Content not JSON.")
		return
	}
	s.mu.Lock()
	s.setAccountDataLocked(r.PathValue("type"), json.RawMessage(body))
	s.mu.Unlock()
	writeJSON(w, 200, map[string]any{})
}

func (s *Server) download(w http.ResponseWriter, r *http.Request, _ []byte) {
	s.mu.Lock()
	f, ok := s.media[r.PathValue("server")+"/"+r.PathValue("media")]
	s.mu.Unlock()
	if !ok {
		writeErr(w, 404, "M_NOT_FOUND", "Not found")
		return
	}
	w.Header().Set("Content-Type", f.mime)
	w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
	w.WriteHeader(200)
	_, _ = w.Write(f.data)
}

// notifyLocked wakes every waiter (long polls, WaitFor).
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) nextEventIDLocked() string {
	s.seq++
	return fmt.Sprintf("$ev%06d_%s", s.seq, strings.ReplaceAll(ServerName, ".", "_"))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"errcode": code, "error": msg})
}

// WaitFor waits until cond holds (re-checked at every change of the
// server), failing t after timeout.
func (s *Server) WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond) // conditions may depend on the client's state
	defer tick.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("fakematrix: timed out after %s waiting for %s", timeout, what)
		}
	}
}
