// Package faketelegram is an in-process Telegram Bot API server for tests. It
// speaks the documented wire format (https://core.telegram.org/bots/api) on
// 127.0.0.1 so that the real client library (github.com/go-telegram/bot) and
// the Switchboard adapter can be exercised end to end:
//
//   - POST /bot<token>/<method> with multipart/form-data, urlencoded or JSON
//     bodies (nested objects arrive as JSON-encoded form fields), answered in the
//     real envelope {"ok":true,"result":…} or
//     {"ok":false,"error_code":…,"description":…,"parameters":{…}};
//   - a wrong token answers 401 Unauthorized, an unknown method 404 Not Found;
//   - getUpdates long polling with Telegram's offset semantics (an update is
//     confirmed, and dropped, once getUpdates is called with a higher offset; a
//     newer getUpdates call terminates an older one with 409 Conflict, as
//     when two bot instances poll at once, counted by Conflicts; polling
//     while a webhook is set answers 409);
//   - sendMessage and editMessageText validate HTML parse mode like Telegram
//     (unsupported or unclosed tags → 400 "can't parse entities"), enforce the
//     4096-character limit and "message is not modified";
//   - sendMessageDraft (Bot API 9.3+) in private chats: a non-zero draft_id,
//     text validated like sendMessage's; the previews are recorded (Drafts)
//     and never become messages. Options.NoDrafts plays an older server that
//     answers the method 404;
//   - sendVoice with an uploaded OGG/Opus file (multipart; Voices shows
//     them) or a file_id;
//   - sendChatAction, getFile and GET /file/bot<token>/<path>, setWebhook,
//     deleteWebhook, getWebhookInfo, setMyCommands, getMyCommands, getMe;
//   - scripted failures (FailNext), blocked chats (Block), group→supergroup
//     migration (MigrateChat) and dropped connections (DropConnections).
//
// Tests drive it like a user would: UserSays / UserSendsPhoto / UserEdits
// enqueue updates (with the entities Telegram would attach, UTF-16 offsets),
// Sent / WaitSent show what the bot posted (current text after edits), and
// Requests / WaitRequests expose the decoded request log.
package faketelegram

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit"
)

// DefaultToken is the token a Server accepts when Options.Token is empty.
const DefaultToken = "123456789:AAFakeTokenForSwitchboardTests_0123456"

// Options configures a Server. Zero values take defaults.
type Options struct {
	Token        string           // accepted bot token; default DefaultToken
	BotUsername  string           // default "switchboard_bot"
	BotFirstName string           // default "Switchboard"
	Now          func() time.Time // message dates; default time.Now
	// Wrap, when set, wraps the fake's HTTP handler: a load harness's tap
	// watches the bot's calls inside the fake's own server instead of as a
	// second HTTP hop.
	Wrap func(http.Handler) http.Handler
	// NoDrafts makes the server answer sendMessageDraft with 404 Not Found,
	// as a Bot API server older than 9.3 does.
	NoDrafts bool
}

// Request is one API call the server received, with its fields decoded to
// strings (nested objects stay JSON-encoded, as on the wire).
type Request struct {
	Method string
	Fields map[string]string
	Time   time.Time
}

// SentMessage is a message the bot posted, as it currently reads.
type SentMessage struct {
	ChatID           int64
	MessageID        int
	ThreadID         int
	Text             string // the text field as last sent or edited (markup included)
	ParseMode        string
	Plain            string // what the user sees: Text with the markup applied
	ReplyToMessageID int
	Edits            int
	Date             time.Time
	Voice            bool // a voice note (sendVoice; its audio in Voices), no text
}

// Failure is a scripted error answer.
type Failure struct {
	Code            int
	Description     string
	RetryAfter      int
	MigrateToChatID int64
}

// TooManyRequests is Telegram's flood-control answer.
func TooManyRequests(retryAfter int) Failure {
	return Failure{Code: 429, Description: fmt.Sprintf("Too Many Requests: retry after %d", retryAfter), RetryAfter: retryAfter}
}

// Forbidden is the answer for a user who blocked the bot.
func Forbidden() Failure {
	return Failure{Code: 403, Description: "Forbidden: bot was blocked by the user"}
}

// CantParseEntities is the answer to markup Telegram rejects.
func CantParseEntities() Failure {
	return Failure{Code: 400, Description: "Bad Request: can't parse entities: Unsupported start tag \"foo\" at byte offset 0"}
}

// InternalError is a 500 from the Bot API.
func InternalError() Failure {
	return Failure{Code: 500, Description: "Internal Server Error"}
}

type storedMsg struct {
	msg       Message
	fromBot   bool
	raw       string
	parseMode string
	edits     int
}

type chatState struct {
	chat   Chat
	nextID int
	msgs   []*storedMsg
	byID   map[int]*storedMsg
	drafts []Draft // sendMessageDraft calls, oldest first
}

type storedFile struct {
	file File
	data []byte
}

type queued struct {
	id  int64
	raw json.RawMessage
}

// Server is a fake Bot API server. Its methods are safe for concurrent use.
type Server struct {
	token    string
	noDrafts bool
	bot      User
	now      func() time.Time
	srv      *httptest.Server

	closed    chan struct{}
	closeOnce sync.Once

	mu            sync.Mutex
	changed       chan struct{}
	nextUpdateID  int64
	queue         []queued
	deliveries    map[int64]int
	pollSeq       int64
	conflicts     int // getUpdates calls ended by a newer one (409)
	chats         map[int64]*chatState
	files         map[string]*storedFile
	filesByPath   map[string]*storedFile
	nextFile      int
	voiceSeq      int         // UserSendsVoice paths (media.go)
	voices        []SentVoice // sendVoice calls (upload.go)
	downloads     int         // file downloads served (Downloads)
	requests      []Request
	failures      map[string][]Failure
	migrated      map[int64]int64
	blocked       map[int64]bool
	webhookURL    string
	webhookSecret string
	commands      []BotCommand
	uploads       []Upload // sendDocument / sendPhoto (uploads.go)
}

// New starts a Server on 127.0.0.1 and closes it when the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	s := Start(opts)
	t.Cleanup(s.Close)
	return s
}

// Start starts a Server on 127.0.0.1; the caller must Close it.
func Start(opts Options) *Server {
	if opts.Token == "" {
		opts.Token = DefaultToken
	}
	if opts.BotUsername == "" {
		opts.BotUsername = "switchboard_bot"
	}
	if opts.BotFirstName == "" {
		opts.BotFirstName = "Switchboard"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	id, _ := strconv.ParseInt(strings.SplitN(opts.Token, ":", 2)[0], 10, 64)
	s := &Server{
		token:        opts.Token,
		noDrafts:     opts.NoDrafts,
		bot:          User{ID: id, IsBot: true, FirstName: opts.BotFirstName, Username: opts.BotUsername},
		now:          opts.Now,
		closed:       make(chan struct{}),
		changed:      make(chan struct{}),
		nextUpdateID: 1000,
		deliveries:   map[int64]int{},
		chats:        map[int64]*chatState{},
		files:        map[string]*storedFile{},
		filesByPath:  map[string]*storedFile{},
		failures:     map[string][]Failure{},
		migrated:     map[int64]int64{},
		blocked:      map[int64]bool{},
	}
	var h http.Handler = http.HandlerFunc(s.serveHTTP)
	if opts.Wrap != nil {
		h = opts.Wrap(h)
	}
	s.srv = httptest.NewUnstartedServer(h)
	s.srv.Config.ConnContext = withConn // see peerGone
	s.srv.Start()
	return s
}

// URL is the server root, as bot.WithServerURL takes it.
func (s *Server) URL() string { return s.srv.URL }

// Token is the accepted bot token.
func (s *Server) Token() string { return s.token }

// Bot is the bot's own user (what getMe answers).
func (s *Server) Bot() User { return s.bot }

// Close stops the server; pending long polls end at once. Idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// DropConnections cuts every client connection abruptly, as a network
// failure does: a long poll in flight ends with a transport error and its
// updates, unconfirmed, are delivered again to the next getUpdates.
func (s *Server) DropConnections() {
	s.srv.CloseClientConnections()
}

// WaitFor waits until cond holds, re-checking it (without the server's lock,
// so it may call the server) at each state change and every 20ms, failing t
// after timeout.
func (s *Server) WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testkit.WaitUntil(t, timeout, 20*time.Millisecond, "faketelegram: "+what, func() (bool, <-chan struct{}) {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		return cond(), ch
	})
}

// notify wakes everyone waiting for a state change. Call with s.mu held.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/file/bot"):
		s.serveFile(w, r)
	case strings.HasPrefix(r.URL.Path, "/bot"):
		s.serveMethod(w, r)
	default:
		writeEnvelope(w, http.StatusNotFound, envelope{ErrorCode: 404, Description: "Not Found"})
	}
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/file/bot")
	tok, path, ok := strings.Cut(rest, "/")
	if !ok || tok != s.token {
		writeEnvelope(w, http.StatusUnauthorized, envelope{ErrorCode: 401, Description: "Unauthorized"})
		return
	}
	s.mu.Lock()
	f := s.filesByPath[path]
	if f != nil {
		s.downloads++
	}
	s.mu.Unlock()
	if f == nil {
		writeEnvelope(w, http.StatusNotFound, envelope{ErrorCode: 404, Description: "Not Found"})
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
	_, _ = w.Write(f.data)
}

func (s *Server) serveMethod(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/bot")
	tok, method, ok := strings.Cut(rest, "/")
	if !ok || tok != s.token {
		writeEnvelope(w, http.StatusUnauthorized, envelope{ErrorCode: 401, Description: "Unauthorized"})
		return
	}
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		writeEnvelope(w, http.StatusMethodNotAllowed, envelope{ErrorCode: 405, Description: "Method Not Allowed"})
		return
	}
	fields, err := decodeFields(r)
	if err != nil {
		writeEnvelope(w, http.StatusBadRequest, envelope{ErrorCode: 400, Description: "Bad Request: " + err.Error()})
		return
	}
	key := strings.ToLower(method)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: method, Fields: fields, Time: s.now()})
	var fail *Failure
	if q := s.failures[key]; len(q) > 0 {
		f := q[0]
		fail = &f
		s.failures[key] = q[1:]
	}
	s.notify()
	s.mu.Unlock()
	if fail != nil {
		writeFailure(w, *fail)
		return
	}
	var res any
	var ferr *Failure
	switch key {
	case "getme":
		res = s.bot
	case "getupdates":
		res, ferr = s.getUpdates(r.Context(), fields)
	case "sendmessage":
		res, ferr = s.sendMessage(fields)
	case "editmessagetext":
		res, ferr = s.editMessageText(fields)
	case "sendmessagedraft":
		if s.noDrafts {
			writeEnvelope(w, http.StatusNotFound, envelope{ErrorCode: 404, Description: "Not Found"})
			return
		}
		res, ferr = s.sendMessageDraft(fields)
	case "sendchataction":
		res, ferr = s.sendChatAction(fields)
	case "getfile":
		res, ferr = s.getFile(fields)
	case "sendvoice":
		res, ferr = s.sendVoice(fields) // upload.go
	case "senddocument", "sendphoto":
		res, ferr = s.sendUpload(key, fields)
	case "setwebhook":
		res, ferr = s.setWebhook(fields)
	case "deletewebhook":
		res, ferr = s.deleteWebhook(fields)
	case "getwebhookinfo":
		s.mu.Lock()
		res = WebhookInfo{URL: s.webhookURL, PendingUpdateCount: len(s.queue)}
		s.mu.Unlock()
	case "setmycommands":
		res, ferr = s.setMyCommands(fields)
	case "getmycommands":
		s.mu.Lock()
		res = append([]BotCommand{}, s.commands...)
		s.mu.Unlock()
	default:
		writeEnvelope(w, http.StatusNotFound, envelope{ErrorCode: 404, Description: "Not Found"})
		return
	}
	if ferr != nil {
		writeFailure(w, *ferr)
		return
	}
	writeEnvelope(w, http.StatusOK, envelope{OK: true, Result: res})
}

func writeFailure(w http.ResponseWriter, f Failure) {
	env := envelope{ErrorCode: f.Code, Description: f.Description}
	if f.RetryAfter > 0 || f.MigrateToChatID != 0 {
		env.Parameters = &ResponseParameters{RetryAfter: f.RetryAfter, MigrateToChatID: f.MigrateToChatID}
	}
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	writeEnvelope(w, f.Code, env)
}

func writeEnvelope(w http.ResponseWriter, status int, env envelope) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(env)
}

// decodeFields reads the parameters the way the Bot API accepts them: query
// string, urlencoded form, multipart form or a JSON object.
func decodeFields(r *http.Request) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range r.URL.Query() {
		if len(v) > 0 {
			out[k] = v[0]
		}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		// Clients (go-telegram/bot among them) send parameterless calls
		// with an empty body under a multipart content type; Telegram
		// accepts that.
		return out, nil
	}
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		form, err := multipart.NewReader(bytes.NewReader(body), params["boundary"]).ReadForm(32 << 20)
		if err != nil {
			return nil, fmt.Errorf("invalid multipart body: %w", err)
		}
		defer func() { _ = form.RemoveAll() }()
		for k, v := range form.Value {
			if len(v) > 0 {
				out[k] = v[0]
			}
		}
		if err := uploadFields(form, out); err != nil { // uploads (sendVoice …): upload.go
			return nil, err
		}
	case "application/x-www-form-urlencoded":
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("invalid form body: %w", err)
		}
		for k, v := range vals {
			if len(v) > 0 {
				out[k] = v[0]
			}
		}
	case "application/json":
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("invalid JSON body: %w", err)
		}
		for k, v := range m {
			var str string
			if json.Unmarshal(v, &str) == nil {
				out[k] = str
			} else {
				out[k] = string(v)
			}
		}
	}
	return out, nil
}

func badRequest(desc string) *Failure {
	return &Failure{Code: 400, Description: "Bad Request: " + desc}
}

func intField(fields map[string]string, name string) (int64, bool, *Failure) {
	v, ok := fields[name]
	if !ok || v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, true, badRequest(fmt.Sprintf("invalid %s specified", name))
	}
	return n, true, nil
}
