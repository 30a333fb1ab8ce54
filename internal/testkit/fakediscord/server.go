// Package fakediscord is a Discord REST API and gateway server for tests,
// speaking the documented wire format closely enough that the real discordgo
// client (v0.29.0) works against it unchanged.
//
// It serves, on 127.0.0.1 only:
//   - REST under /api/v9: gateway and gateway/bot discovery, users/@me,
//     channels/{id}, message create (POST, with nonce/enforce_nonce and
//     allowed_mentions), edit (PATCH), typing, and history (GET ?after=);
//   - attachment downloads under /attachments/... (the messages it emits
//     advertise https://cdn.discordapp.com/attachments/... URLs, so a client
//     must rewrite the CDN host to reach them, as production code would with a
//     proxy);
//   - a gateway WebSocket at /gateway/ speaking the real opcodes: 10 HELLO,
//     1 HEARTBEAT → 11 ACK (switchable off), 2 IDENTIFY → READY + GUILD_CREATE,
//     6 RESUME → replay + RESUMED (or 9 INVALID_SESSION), 7 RECONNECT, 9
//     INVALID_SESSION, dispatches with increasing sequence numbers, zlib
//     payload compression when IDENTIFY asks for it, and close codes.
//
// Every request and gateway payload is recorded; Wait* helpers take a
// timeout so tests read like stories. Sessions follow Discord's rules: a client
// close with 1000/1001 invalidates the session; a dropped TCP connection keeps
// it resumable, and dispatches produced while detached are replayed on RESUME.
package fakediscord

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/switchboard-bot/switchboard/internal/testkit"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// DefaultBotID is the bot user id used when Options.BotID is empty.
const DefaultBotID = "100000000000000001"

// Options configures a Server.
type Options struct {
	// Token is the expected bot token (without the "Bot " prefix). Empty
	// accepts any token.
	Token string
	// BotID / BotName describe the bot user (defaults DefaultBotID, "switchboard").
	BotID   string
	BotName string
	// HeartbeatInterval is sent in HELLO (default 41.25s, Discord's value).
	HeartbeatInterval time.Duration
	// Logger receives debug logs (nil: discard).
	Logger *slog.Logger
	// Wrap, when set, wraps the fake's HTTP handler (REST, attachments and
	// the gateway upgrade): a load harness's tap watches the bot's calls
	// inside the fake's own server instead of as a second HTTP hop.
	Wrap func(http.Handler) http.Handler
}

type channelRec struct {
	Channel
	messages []*Message
}

type attachmentRec struct {
	data        []byte
	contentType string
}

type failure struct {
	status     int
	code       int
	message    string
	retryAfter float64
	global     bool
	drop       bool
}

// Server is a fake Discord. Create it with New or Start.
type Server struct {
	opts Options
	log  *slog.Logger
	srv  *httptest.Server

	upgrader websocket.Upgrader

	mu          sync.Mutex
	changed     chan struct{}
	lastID      uint64
	guilds      map[string]string // id → name
	channels    map[string]*channelRec
	attachments map[string]attachmentRec
	sessions    map[string]*session
	conns       map[*gwConn]struct{}
	ack         bool
	refuseMC    bool
	failures    []failure
	requests    []Request
	msgReqs     []MessageRequest
	identifies  []Identify
	resumes     []Resume
	heartbeats  int
	connections int
	closeCodes  []int
	typing      map[string]int
	uploads     []Upload // message creates with files (files.go)
}

// New starts a fake Discord on 127.0.0.1. Call Close when done.
func New(opts Options) *Server {
	if opts.BotID == "" {
		opts.BotID = DefaultBotID
	}
	if opts.BotName == "" {
		opts.BotName = "switchboard"
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = 41250 * time.Millisecond
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		opts:        opts,
		log:         log,
		changed:     make(chan struct{}),
		guilds:      map[string]string{},
		channels:    map[string]*channelRec{},
		attachments: map[string]attachmentRec{},
		sessions:    map[string]*session{},
		conns:       map[*gwConn]struct{}{},
		typing:      map[string]int{},
		ack:         true,
	}
	s.upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v9/gateway", s.handleGateway)
	mux.HandleFunc("GET /api/v9/gateway/bot", s.handleGatewayBot)
	mux.HandleFunc("GET /api/v9/users/@me", s.handleMe)
	mux.HandleFunc("GET /api/v9/channels/{cid}", s.handleGetChannel)
	mux.HandleFunc("GET /api/v9/channels/{cid}/messages", s.handleHistory)
	mux.HandleFunc("POST /api/v9/channels/{cid}/messages", s.handleCreate)
	mux.HandleFunc("PATCH /api/v9/channels/{cid}/messages/{mid}", s.handleEdit)
	mux.HandleFunc("POST /api/v9/channels/{cid}/typing", s.handleTyping)
	mux.HandleFunc("GET /attachments/{cid}/{aid}/{name}", s.handleAttachment)
	mux.HandleFunc("GET /gateway/", s.handleWS)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.record(r, nil, http.StatusNotFound, true)
		writeError(w, http.StatusNotFound, 0, "404: Not Found")
	})

	var h http.Handler = mux
	if opts.Wrap != nil {
		h = opts.Wrap(mux)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("fakediscord: listen: %v", err))
	}
	s.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	s.srv.Start()
	return s
}

// Start is New plus t.Cleanup(Close).
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s := New(opts)
	t.Cleanup(s.Close)
	return s
}

// Close closes every gateway connection and the HTTP server.
func (s *Server) Close() {
	s.mu.Lock()
	conns := make([]*gwConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.kill()
	}
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// URL is the API root to give the adapter (scheme, host and port).
func (s *Server) URL() string { return s.srv.URL }

// GatewayURL is the WebSocket URL /gateway returns.
func (s *Server) GatewayURL() string {
	return "ws://" + strings.TrimPrefix(s.srv.URL, "http://") + "/gateway/"
}

// BotID is the bot user's id.
func (s *Server) BotID() string { return s.opts.BotID }

// Token is the expected bot token ("" if any is accepted).
func (s *Server) Token() string { return s.opts.Token }

// ---- state changes and waiting ----

// notifyLocked wakes every waiter; s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// WaitFor polls cond (under no lock) each time the fake's state changes until
// it returns true, failing t after timeout.
func (s *Server) WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testkit.WaitUntil(t, timeout, 50*time.Millisecond, "fakediscord: "+what, func() (bool, <-chan struct{}) {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		return cond(), ch
	})
}

// ---- snowflakes ----

const discordEpochMS = 1420070400000

func (s *Server) nextIDLocked() string {
	id := uint64(time.Now().UnixMilli()-discordEpochMS) << 22
	if id <= s.lastID {
		id = s.lastID + 1
	}
	s.lastID = id
	return strconv.FormatUint(id, 10)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000+00:00") }

// ---- channels ----

// AddGuild registers a guild (sent in GUILD_CREATE after READY).
func (s *Server) AddGuild(guildID, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.guilds[guildID] = name
	s.notifyLocked()
}

// AddChannel registers a guild text channel (and its guild).
func (s *Server) AddChannel(guildID, channelID, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addChannelLocked(Channel{ID: channelID, Type: ChannelTypeGuildText, GuildID: guildID, Name: name})
}

// AddThread registers a public thread under parentID.
func (s *Server) AddThread(guildID, parentID, threadID, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.channels[parentID]; !ok {
		s.addChannelLocked(Channel{ID: parentID, Type: ChannelTypeGuildText, GuildID: guildID, Name: "parent"})
	}
	s.addChannelLocked(Channel{ID: threadID, Type: ChannelTypePublicThread, GuildID: guildID, ParentID: parentID, Name: name})
}

// AddDM registers a DM channel.
func (s *Server) AddDM(channelID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addChannelLocked(Channel{ID: channelID, Type: ChannelTypeDM})
}

func (s *Server) addChannelLocked(c Channel) *channelRec {
	if c.GuildID != "" {
		if _, ok := s.guilds[c.GuildID]; !ok {
			s.guilds[c.GuildID] = "guild-" + c.GuildID
		}
	}
	rec := &channelRec{Channel: c}
	s.channels[c.ID] = rec
	s.notifyLocked()
	return rec
}

// History returns every message in the channel, oldest first.
func (s *Server) History(channelID string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.channels[channelID]
	if rec == nil {
		return nil
	}
	out := make([]Message, 0, len(rec.messages))
	for _, m := range rec.messages {
		out = append(out, *m)
	}
	return out
}

// ---- injecting user messages ----

var mentionRE = regexp.MustCompile(`<@!?(\d+)>`)

// UserSays posts a message by authorID into channelID (creating the channel:
// a DM when opts.GuildID is empty, else a guild text channel) and dispatches
// MESSAGE_CREATE to every live session whose intents cover it. Mentions
// (<@id>, <@!id>) in text are reflected in the mentions array.
func (s *Server) UserSays(channelID, authorID, text string, opts SayOptions) Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.channels[channelID]
	if rec == nil {
		if opts.GuildID == "" {
			rec = s.addChannelLocked(Channel{ID: channelID, Type: ChannelTypeDM})
		} else {
			rec = s.addChannelLocked(Channel{ID: channelID, Type: ChannelTypeGuildText, GuildID: opts.GuildID, Name: "chan-" + channelID})
		}
	}
	name := opts.AuthorName
	if name == "" {
		name = "user-" + authorID
	}
	now := time.Now()
	m := &Message{
		ID:           s.nextIDLocked(),
		ChannelID:    channelID,
		GuildID:      rec.GuildID,
		Author:       User{ID: authorID, Username: name, Discriminator: "0", Bot: opts.Bot},
		Content:      text,
		Timestamp:    timestamp(now),
		Mentions:     []User{},
		MentionRoles: []string{},
		Attachments:  []Attachment{},
		Embeds:       []json.RawMessage{},
		Type:         opts.Type,
	}
	if rec.GuildID != "" {
		m.Member = &Member{Nick: opts.Nick, Roles: []string{}, JoinedAt: timestamp(now.Add(-time.Hour))}
	}
	for _, match := range mentionRE.FindAllStringSubmatch(text, -1) {
		m.Mentions = append(m.Mentions, s.userLocked(match[1]))
	}
	if opts.ReplyTo != "" {
		if m.Type == 0 {
			m.Type = 19
		}
		m.MessageReference = &MessageReference{MessageID: opts.ReplyTo, ChannelID: channelID, GuildID: rec.GuildID}
		if ref := findMessage(rec, opts.ReplyTo); ref != nil {
			cp := *ref
			cp.ReferencedMessage = nil
			m.ReferencedMessage = &cp
			// Discord puts the replied-to author into mentions when pinging.
			m.Mentions = append(m.Mentions, ref.Author)
		}
	}
	for _, f := range opts.Attachments {
		aid := s.nextIDLocked()
		size := f.Size
		if size == 0 {
			size = len(f.Data)
		}
		path := "/attachments/" + channelID + "/" + aid + "/" + f.Filename
		s.attachments[path] = attachmentRec{data: f.Data, contentType: f.ContentType}
		m.Attachments = append(m.Attachments, Attachment{
			ID: aid, Filename: f.Filename, ContentType: f.ContentType, Size: size,
			URL:      "https://cdn.discordapp.com" + path,
			ProxyURL: "https://media.discordapp.net" + path,
		})
	}
	rec.messages = append(rec.messages, m)
	s.dispatchMessageLocked("MESSAGE_CREATE", m)
	s.notifyLocked()
	return *m
}

// Redispatch delivers MESSAGE_CREATE for a message already in channelID
// again, as Discord may after a RESUME, and reports whether the message
// exists.
func (s *Server) Redispatch(channelID, messageID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.channels[channelID]
	if rec == nil {
		return false
	}
	m := findMessage(rec, messageID)
	if m == nil {
		return false
	}
	s.dispatchMessageLocked("MESSAGE_CREATE", m)
	s.notifyLocked()
	return true
}

func (s *Server) userLocked(id string) User {
	if id == s.opts.BotID {
		return s.botUser()
	}
	return User{ID: id, Username: "user-" + id, Discriminator: "0"}
}

func (s *Server) botUser() User {
	return User{ID: s.opts.BotID, Username: s.opts.BotName, Discriminator: "0", Bot: true}
}

func findMessage(rec *channelRec, id string) *Message {
	for _, m := range rec.messages {
		if m.ID == id {
			return m
		}
	}
	return nil
}

// ---- scripted failures ----

// RateLimitNext makes the next n message create/edit requests answer 429 with
// the given retry_after (seconds) and global flag, with Discord's headers
// (Retry-After, X-RateLimit-Reset-After, X-RateLimit-Global, X-RateLimit-Scope).
func (s *Server) RateLimitNext(n int, retryAfter float64, global bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures = append(s.failures, failure{status: http.StatusTooManyRequests, retryAfter: retryAfter, global: global})
	}
}

// FailNext makes the next n message create/edit requests answer status with
// a Discord JSON error {code, message}.
func (s *Server) FailNext(n, status, code int, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures = append(s.failures, failure{status: status, code: code, message: message})
	}
}

// DropNextPost makes the next n message creates succeed on the fake's side
// (the message exists and is dispatched) but hangs up before answering, as a
// lost response would.
func (s *Server) DropNextPost(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures = append(s.failures, failure{drop: true})
	}
}

func (s *Server) takeFailureLocked() (failure, bool) {
	if len(s.failures) == 0 {
		return failure{}, false
	}
	f := s.failures[0]
	s.failures = s.failures[1:]
	return f, true
}

// ---- recordings ----

// Requests returns every REST request received, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// MessageRequests returns every message create/edit request, in order.
func (s *Server) MessageRequests() []MessageRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]MessageRequest(nil), s.msgReqs...)
}

// Sent returns the bot's messages currently in channelID (edits applied),
// oldest first.
func (s *Server) Sent(channelID string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sentLocked(channelID)
}

func (s *Server) sentLocked(channelID string) []Message {
	rec := s.channels[channelID]
	if rec == nil {
		return nil
	}
	var out []Message
	for _, m := range rec.messages {
		if m.Author.ID == s.opts.BotID {
			out = append(out, *m)
		}
	}
	return out
}

// WaitSent waits until the bot has at least n messages in channelID and
// returns them.
func (s *Server) WaitSent(t testing.TB, channelID string, n int, timeout time.Duration) []Message {
	t.Helper()
	var got []Message
	s.WaitFor(t, timeout, fmt.Sprintf("%d bot message(s) in channel %s", n, channelID), func() bool {
		got = s.Sent(channelID)
		return len(got) >= n
	})
	return got
}

// Typing returns how many typing requests channelID received.
func (s *Server) Typing(channelID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.typing[channelID]
}

// WaitTyping waits for at least n typing requests in channelID.
func (s *Server) WaitTyping(t testing.TB, channelID string, n int, timeout time.Duration) {
	t.Helper()
	s.WaitFor(t, timeout, fmt.Sprintf("%d typing request(s) in %s", n, channelID), func() bool {
		return s.Typing(channelID) >= n
	})
}

// WaitMessageRequests waits for at least n message create/edit requests.
func (s *Server) WaitMessageRequests(t testing.TB, n int, timeout time.Duration) []MessageRequest {
	t.Helper()
	var got []MessageRequest
	s.WaitFor(t, timeout, fmt.Sprintf("%d message request(s)", n), func() bool {
		got = s.MessageRequests()
		return len(got) >= n
	})
	return got
}

func (s *Server) record(r *http.Request, body []byte, status int, authorized bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordLocked(r, body, status, authorized)
}

func (s *Server) recordLocked(r *http.Request, body []byte, status int, authorized bool) {
	s.requests = append(s.requests, Request{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: body,
		Authorized: authorized, Status: status, At: time.Now(),
	})
	s.notifyLocked()
}

// sortMessagesDesc sorts by snowflake, newest first (Discord's history order).
func sortMessagesDesc(ms []Message) {
	sort.Slice(ms, func(i, j int) bool { return snowflakeLess(ms[j].ID, ms[i].ID) })
}

func snowflakeLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}
