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
//   - sendChatAction, getFile and GET /file/bot<token>/<path>, setWebhook,
//     deleteWebhook, getWebhookInfo, setMyCommands, getMyCommands, getMe;
//   - scripted failures (FailNext), blocked chats (Block) and group→supergroup
//     migration (MigrateChat).
//
// Tests drive it like a user would: UserSays / UserSendsPhoto / UserEdits
// enqueue updates (with the entities Telegram would attach, UTF-16 offsets),
// Sent / WaitSent show what the bot posted (current text after edits), and
// Requests / WaitRequests expose the decoded request log.
package faketelegram

import (
	"bytes"
	"context"
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
)

// DefaultToken is the token a Server accepts when Options.Token is empty.
const DefaultToken = "123456789:AAFakeTokenForSwitchboardTests_0123456"

// Options configures a Server. Zero values take defaults.
type Options struct {
	Token        string           // accepted bot token; default DefaultToken
	BotUsername  string           // default "switchboard_bot"
	BotFirstName string           // default "Switchboard"
	Now          func() time.Time // message dates; default time.Now
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
	token string
	bot   User
	now   func() time.Time
	srv   *httptest.Server

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
	requests      []Request
	failures      map[string][]Failure
	migrated      map[int64]int64
	blocked       map[int64]bool
	webhookURL    string
	webhookSecret string
	commands      []BotCommand
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
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
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
	case "sendchataction":
		res, ferr = s.sendChatAction(fields)
	case "getfile":
		res, ferr = s.getFile(fields)
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

// getUpdates implements long polling. Call without s.mu held.
func (s *Server) getUpdates(ctx context.Context, fields map[string]string) (any, *Failure) {
	offset, _, f := intField(fields, "offset")
	if f != nil {
		return nil, f
	}
	limit, hasLimit, f := intField(fields, "limit")
	if f != nil {
		return nil, f
	}
	if !hasLimit || limit <= 0 || limit > 100 {
		limit = 100
	}
	timeout, _, f := intField(fields, "timeout")
	if f != nil {
		return nil, f
	}
	deadline := time.NewTimer(time.Duration(max(timeout, 0)) * time.Second)
	defer deadline.Stop()

	s.mu.Lock()
	if s.webhookURL != "" {
		s.mu.Unlock()
		return nil, &Failure{Code: 409, Description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"}
	}
	switch {
	case offset > 0:
		i := 0
		for i < len(s.queue) && s.queue[i].id < offset {
			i++
		}
		s.queue = s.queue[i:]
	case offset < 0:
		if keep := int(-offset); keep < len(s.queue) {
			s.queue = s.queue[len(s.queue)-keep:]
		}
	}
	s.pollSeq++
	seq := s.pollSeq
	s.notify()
	for {
		if s.pollSeq != seq {
			s.conflicts++
			s.mu.Unlock()
			return nil, &Failure{Code: 409, Description: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}
		}
		if len(s.queue) > 0 {
			n := min(int(limit), len(s.queue))
			out := make([]json.RawMessage, n)
			for i := range n {
				out[i] = s.queue[i].raw
				s.deliveries[s.queue[i].id]++
			}
			s.notify()
			s.mu.Unlock()
			return out, nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return []json.RawMessage{}, nil
		case <-ctx.Done():
			return []json.RawMessage{}, nil
		case <-s.closed:
			return []json.RawMessage{}, nil
		}
		s.mu.Lock()
	}
}

// resolveChat finds the chat a chat_id field names. Call with s.mu held.
func (s *Server) resolveChat(fields map[string]string) (*chatState, *Failure) {
	raw := strings.TrimSpace(fields["chat_id"])
	if raw == "" {
		return nil, badRequest("chat_id is empty")
	}
	if strings.HasPrefix(raw, "@") {
		for _, c := range s.chats {
			if strings.EqualFold("@"+c.chat.Username, raw) {
				return c, nil
			}
		}
		return nil, badRequest("chat not found")
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return nil, badRequest("chat not found")
	}
	if to, ok := s.migrated[id]; ok {
		return nil, &Failure{Code: 400, Description: "Bad Request: group chat was upgraded to a supergroup chat", MigrateToChatID: to}
	}
	if s.blocked[id] {
		if id > 0 {
			return nil, &Failure{Code: 403, Description: "Forbidden: bot was blocked by the user"}
		}
		return nil, &Failure{Code: 403, Description: "Forbidden: bot was kicked from the group chat"}
	}
	c := s.chats[id]
	if c == nil {
		return nil, badRequest("chat not found")
	}
	return c, nil
}

func renderText(text, parseMode string) (string, *Failure) {
	plain := text
	switch strings.ToLower(parseMode) {
	case "":
	case "html":
		p, err := parseHTML(text)
		if err != nil {
			return "", badRequest("can't parse entities: " + err.Error())
		}
		plain = p
	case "markdown", "markdownv2":
		// Accepted without validation: Switchboard sends HTML.
	default:
		return "", badRequest("unsupported parse_mode")
	}
	if strings.TrimSpace(plain) == "" {
		return "", badRequest("message text is empty")
	}
	if utf16Len(plain) > 4096 {
		return "", badRequest("message is too long")
	}
	return plain, nil
}

func (s *Server) sendMessage(fields map[string]string) (any, *Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, f := s.resolveChat(fields)
	if f != nil {
		return nil, f
	}
	if fields["text"] == "" {
		return nil, badRequest("message text is empty")
	}
	plain, f := renderText(fields["text"], fields["parse_mode"])
	if f != nil {
		return nil, f
	}
	thread, _, f := intField(fields, "message_thread_id")
	if f != nil {
		return nil, f
	}
	if thread != 0 && !c.chat.IsForum && c.chat.Type != "private" {
		return nil, badRequest("message thread not found")
	}
	var replyTo *Message
	replyID, allowWithout := 0, false
	if rp := fields["reply_parameters"]; rp != "" {
		var p ReplyParameters
		if err := json.Unmarshal([]byte(rp), &p); err != nil {
			return nil, badRequest("can't parse reply parameters JSON object")
		}
		replyID, allowWithout = p.MessageID, p.AllowSendingWithoutReply
	} else if v, ok, f := intField(fields, "reply_to_message_id"); f != nil {
		return nil, f
	} else if ok {
		replyID = int(v)
		allowWithout = fields["allow_sending_without_reply"] == "true"
	}
	if replyID != 0 {
		if m := c.byID[replyID]; m != nil {
			cp := m.msg
			cp.ReplyToMessage = nil
			replyTo = &cp
		} else if !allowWithout {
			return nil, badRequest("message to be replied not found")
		}
	}
	bot := s.bot
	m := s.appendMessage(c, Message{
		From:            &bot,
		Date:            s.now().Unix(),
		Text:            plain,
		MessageThreadID: int(thread),
		IsTopicMessage:  thread != 0 && c.chat.IsForum,
		ReplyToMessage:  replyTo,
	}, true)
	m.raw = fields["text"]
	m.parseMode = fields["parse_mode"]
	s.notify()
	return m.msg, nil
}

// appendMessage stores msg in chat c with the chat's next message id. Call with s.mu held.
func (s *Server) appendMessage(c *chatState, msg Message, fromBot bool) *storedMsg {
	c.nextID++
	msg.MessageID = c.nextID
	msg.Chat = c.chat
	m := &storedMsg{msg: msg, fromBot: fromBot, raw: msg.Text}
	c.msgs = append(c.msgs, m)
	c.byID[msg.MessageID] = m
	return m
}

func (s *Server) editMessageText(fields map[string]string) (any, *Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fields["inline_message_id"] != "" {
		return nil, badRequest("MESSAGE_ID_INVALID")
	}
	c, f := s.resolveChat(fields)
	if f != nil {
		return nil, f
	}
	id, ok, f := intField(fields, "message_id")
	if f != nil {
		return nil, f
	}
	if !ok {
		return nil, badRequest("message identifier is not specified")
	}
	m := c.byID[int(id)]
	if m == nil {
		return nil, badRequest("message to edit not found")
	}
	if !m.fromBot {
		return nil, badRequest("message can't be edited")
	}
	if fields["text"] == "" {
		return nil, badRequest("message text is empty")
	}
	plain, f := renderText(fields["text"], fields["parse_mode"])
	if f != nil {
		return nil, f
	}
	if plain == m.msg.Text && fields["text"] == m.raw {
		return nil, badRequest("message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")
	}
	m.msg.Text = plain
	m.msg.EditDate = s.now().Unix()
	m.raw = fields["text"]
	m.parseMode = fields["parse_mode"]
	m.edits++
	s.notify()
	return m.msg, nil
}

var chatActions = map[string]bool{
	"typing": true, "upload_photo": true, "record_video": true, "upload_video": true,
	"record_voice": true, "upload_voice": true, "upload_document": true, "choose_sticker": true,
	"find_location": true, "record_video_note": true, "upload_video_note": true,
}

func (s *Server) sendChatAction(fields map[string]string) (any, *Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, f := s.resolveChat(fields); f != nil {
		return nil, f
	}
	if !chatActions[fields["action"]] {
		return nil, badRequest("wrong parameter action in request")
	}
	return true, nil
}

func (s *Server) getFile(fields map[string]string) (any, *Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.files[fields["file_id"]]
	if f == nil {
		return nil, badRequest("invalid file_id")
	}
	if len(f.data) > 20<<20 {
		return nil, badRequest("file is too big")
	}
	return f.file, nil
}

func validSecret(s string) bool {
	if len(s) == 0 || len(s) > 256 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (s *Server) setWebhook(fields map[string]string) (any, *Failure) {
	u := fields["url"]
	secret := fields["secret_token"]
	if secret != "" && !validSecret(secret) {
		return nil, badRequest("bad webhook: secret token contains unallowed characters")
	}
	if u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return nil, badRequest("bad webhook: Webhook can be set up only on ports 80, 88, 443 or 8443")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.webhookURL, s.webhookSecret = u, secret
	if fields["drop_pending_updates"] == "true" {
		s.queue = nil
	}
	s.pollSeq++ // a running getUpdates is terminated with 409
	s.notify()
	return true, nil
}

func (s *Server) deleteWebhook(fields map[string]string) (any, *Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.webhookURL, s.webhookSecret = "", ""
	if fields["drop_pending_updates"] == "true" {
		s.queue = nil
	}
	s.notify()
	return true, nil
}

func (s *Server) setMyCommands(fields map[string]string) (any, *Failure) {
	var cmds []BotCommand
	if err := json.Unmarshal([]byte(fields["commands"]), &cmds); err != nil {
		return nil, badRequest("can't parse commands JSON object")
	}
	for _, c := range cmds {
		if c.Command == "" || len(c.Command) > 32 || strings.ToLower(c.Command) != c.Command ||
			strings.Trim(c.Command, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
			return nil, badRequest("BOT_COMMAND_INVALID")
		}
		if c.Description == "" || len([]rune(c.Description)) > 256 {
			return nil, badRequest("BOT_COMMAND_DESCRIPTION_INVALID")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commands = cmds
	s.notify()
	return true, nil
}
