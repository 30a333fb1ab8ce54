// Package fakewhatsapp is a fake of Meta's WhatsApp Business Cloud API for
// tests: the Graph API endpoints the adapter calls (GET /{phone-number-id},
// POST /{phone-number-id}/messages with text, template and read/typing
// bodies, GET /{media-id} and the media URL it returns) and the webhook
// side (signed POST deliveries of the documented "messages" payload, Meta's
// retry of a delivery not answered 200, GET verification).
//
// Wire facts it follows (Meta's Cloud API docs): every Graph request needs
// "Authorization: Bearer <token>" (else 401, code 190); paths start with a
// version (/v23.0/…); errors are {"error":{"message","type","code",
// "error_data":{"details"},"fbtrace_id"}}; a sent message answers
// {"messaging_product","contacts":[{"input","wa_id"}],"messages":[{"id"}]};
// text bodies are at most 4,096 characters; free-form messages to a user
// whose last message is more than 24 hours old (or who never wrote) fail
// with code 131047; a read receipt is {"status":"read","message_id"} with an
// optional "typing_indicator":{"type":"text"}; an appsecret_proof not made
// with the app's secret fails with code 100. Webhook deliveries carry
// X-Hub-Signature-256: sha256=<hex HMAC-SHA256(app secret, body)>, wa_ids
// without '+', timestamps as decimal strings; a delivery not answered 200 is
// sent again with growing delays until it is or the fake closes.
package fakewhatsapp

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit"
)

// Defaults of Options.
const (
	DefaultPhoneNumberID = "106540352242922"
	DefaultDisplayNumber = "15550001234"
	DefaultAccessToken   = "EAAfake-whatsapp-token-0123456789"
	DefaultAppSecret     = "fake-app-secret-abcdef0123456789"
	DefaultVerifyToken   = "fake-verify-token-42"
)

// Options configures the fake. Zero values take the defaults.
type Options struct {
	PhoneNumberID string
	DisplayNumber string
	AccessToken   string
	AppSecret     string
	VerifyToken   string
	// Now is the fake's clock (message timestamps, the 24-hour window).
	Now func() time.Time
	// RetryMin and RetryMax bound the delay between deliveries of a
	// webhook that was not answered 200 (defaults 10ms and 300ms).
	RetryMin, RetryMax time.Duration
	// MediaURL, when set, is the base of the media URLs GET /{media-id}
	// returns instead of the fake's own (a CDN host; default the fake).
	MediaURL string
	// MediaRedirect, when set, makes every media download answer 302 to
	// this URL (a CDN redirecting, or an attacker aiming at an internal
	// service).
	MediaRedirect string
}

// Sent is a message the bot sent, as the fake accepted it.
type Sent struct {
	ID           string
	To           string // wa_id, no '+'
	Type         string // text | template
	Text         string // text body, or the template's first parameter
	Template     string
	Language     string
	CallbackData string
	MediaID      string // document and image messages (uploads.go)
	Filename     string
	Caption      string
}

// Read is a read receipt the bot sent.
type Read struct {
	MessageID string
	Typing    bool
	At        time.Time
}

// Failure is an error answer the fake gives to the next send.
type Failure struct {
	HTTPStatus int
	Code       int
	Message    string
	RetryAfter int // seconds, as a Retry-After header; 0 = none
}

type mediaFile struct {
	mime string
	data []byte
}

// Server is the fake.
type Server struct {
	opts Options
	srv  *httptest.Server
	hook *http.Client

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	changed  chan struct{}
	webhook  string
	seq      int
	sent     []Sent
	reads    []Read
	inbound  map[string]string // wamid → wa_id of users' messages
	lastUser map[string]time.Time
	media    map[string]mediaFile
	failNext []Failure
	refused  int // sends refused (window, failures)
	requests map[string]int
}

// New starts a fake that closes when the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	s := Start(opts)
	t.Cleanup(s.Close)
	return s
}

// Start starts a fake; Close stops it.
func Start(opts Options) *Server {
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&opts.PhoneNumberID, DefaultPhoneNumberID)
	def(&opts.DisplayNumber, DefaultDisplayNumber)
	def(&opts.AccessToken, DefaultAccessToken)
	def(&opts.AppSecret, DefaultAppSecret)
	def(&opts.VerifyToken, DefaultVerifyToken)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.RetryMin <= 0 {
		opts.RetryMin = 10 * time.Millisecond
	}
	if opts.RetryMax <= 0 {
		opts.RetryMax = 300 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		opts: opts, ctx: ctx, cancel: cancel,
		hook:     &http.Client{Timeout: 30 * time.Second},
		changed:  make(chan struct{}),
		inbound:  map[string]string{},
		lastUser: map[string]time.Time{},
		media:    map[string]mediaFile{},
		requests: map[string]int{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveGraph))
	return s
}

// Close stops the server and every pending webhook delivery.
func (s *Server) Close() {
	s.cancel()
	s.wg.Wait()
	s.srv.Close()
	s.hook.CloseIdleConnections()
}

// URL is the Graph API root (channels.whatsapp.api_url).
func (s *Server) URL() string { return s.srv.URL }

// PhoneNumberID, AccessToken, AppSecret and VerifyToken are the credentials
// the fake accepts.
func (s *Server) PhoneNumberID() string { return s.opts.PhoneNumberID }

// AccessToken is the bearer token the fake accepts.
func (s *Server) AccessToken() string { return s.opts.AccessToken }

// AppSecret signs webhook deliveries.
func (s *Server) AppSecret() string { return s.opts.AppSecret }

// VerifyToken is the webhook verification token.
func (s *Server) VerifyToken() string { return s.opts.VerifyToken }

// SetWebhook sets the callback URL deliveries are posted to.
func (s *Server) SetWebhook(url string) {
	s.mu.Lock()
	s.webhook = url
	s.mu.Unlock()
}

// DropConnections closes every connection clients hold to the Graph API.
func (s *Server) DropConnections() {
	s.srv.CloseClientConnections()
	s.hook.CloseIdleConnections()
}

// FailNext makes the next sends (text or template) fail with f, in order.
func (s *Server) FailNext(f ...Failure) {
	s.mu.Lock()
	s.failNext = append(s.failNext, f...)
	s.mu.Unlock()
}

// AddMedia stores an uploaded file and returns its media id.
func (s *Server) AddMedia(mime string, data []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	id := fmt.Sprintf("%d", 900000000000+s.seq)
	s.media[id] = mediaFile{mime: mime, data: append([]byte(nil), data...)}
	return id
}

// Sent returns the messages the bot sent to waID ("" = all), oldest first.
func (s *Server) Sent(waID string) []Sent {
	waID = strings.TrimPrefix(waID, "+")
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Sent
	for _, m := range s.sent {
		if waID == "" || m.To == waID {
			out = append(out, m)
		}
	}
	return out
}

// Reads returns the read receipts received, oldest first.
func (s *Server) Reads() []Read {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Read(nil), s.reads...)
}

// Refused counts sends the fake refused.
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Requests counts Graph requests by "METHOD kind" (kind: phone, messages,
// media, download).
func (s *Server) Requests(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[key]
}

// WaitFor waits until cond holds, re-checked at each change of the fake and
// every 20ms, failing t after timeout.
func (s *Server) WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testkit.WaitUntil(t, timeout, 20*time.Millisecond, "fakewhatsapp: "+what, func() (bool, <-chan struct{}) {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		return cond(), ch
	})
}

// notify wakes waiters; call with s.mu held.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Sign returns the X-Hub-Signature-256 value of body.
func (s *Server) Sign(body []byte) string {
	return Signature(s.opts.AppSecret, body)
}

// Signature is "sha256=" + hex HMAC-SHA256(secret, body).
func Signature(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	_, _ = m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

var versionRE = regexp.MustCompile(`^/v[0-9]+\.[0-9]+/`)

func (s *Server) serveGraph(w http.ResponseWriter, r *http.Request) {
	if id, ok := strings.CutPrefix(r.URL.Path, "/download/"); ok {
		s.serveDownload(w, r, id)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+s.opts.AccessToken {
		graphErr(w, http.StatusUnauthorized, 190, "OAuthException", "Invalid OAuth access token - Cannot parse access token", "")
		return
	}
	loc := versionRE.FindStringIndex(r.URL.Path)
	if loc == nil {
		graphErr(w, http.StatusBadRequest, 2500, "OAuthException", "Unknown path components: "+r.URL.Path, "")
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path[loc[1]:], "/"), "/")
	switch {
	case r.Method == http.MethodGet && len(parts) == 1 && parts[0] == s.opts.PhoneNumberID:
		s.count("GET phone")
		s.servePhone(w, r)
	case r.Method == http.MethodGet && len(parts) == 1:
		s.count("GET media")
		s.serveMediaInfo(w, parts[0])
	case r.Method == http.MethodPost && len(parts) == 2 && parts[0] == s.opts.PhoneNumberID && parts[1] == "media":
		s.count("POST media")
		s.serveUpload(w, r) // uploads.go
	case r.Method == http.MethodPost && len(parts) == 2 && parts[0] == s.opts.PhoneNumberID && parts[1] == "messages":
		s.count("POST messages")
		s.serveMessages(w, r)
	default:
		graphErr(w, http.StatusBadRequest, 100, "GraphMethodException",
			fmt.Sprintf("Unsupported %s request. Object with ID '%s' does not exist, cannot be loaded due to missing permissions, or does not support this operation.", r.Method, parts[0]), "")
	}
}

func (s *Server) count(key string) {
	s.mu.Lock()
	s.requests[key]++
	s.notify()
	s.mu.Unlock()
}

func (s *Server) servePhone(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Query().Get("appsecret_proof"); p != "" {
		m := hmac.New(sha256.New, []byte(s.opts.AppSecret))
		_, _ = m.Write([]byte(s.opts.AccessToken))
		if !hmac.Equal([]byte(p), []byte(hex.EncodeToString(m.Sum(nil)))) {
			graphErr(w, http.StatusBadRequest, 100, "GraphMethodException", "Invalid appsecret_proof provided in the API argument", "")
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": s.opts.PhoneNumberID, "display_phone_number": s.opts.DisplayNumber,
		"verified_name": "Switchboard Test", "quality_rating": "GREEN",
	})
}

func (s *Server) serveMediaInfo(w http.ResponseWriter, id string) {
	s.mu.Lock()
	f, ok := s.media[id]
	s.mu.Unlock()
	if !ok {
		graphErr(w, http.StatusBadRequest, 100, "GraphMethodException",
			fmt.Sprintf("Unsupported get request. Object with ID '%s' does not exist, cannot be loaded due to missing permissions, or does not support this operation.", id), "")
		return
	}
	sum := sha256.Sum256(f.data)
	writeJSON(w, http.StatusOK, map[string]any{
		"messaging_product": "whatsapp", "id": id, "mime_type": f.mime,
		"sha256": hex.EncodeToString(sum[:]), "file_size": len(f.data),
		"url": s.mediaBase() + "/download/" + id + "?ext=1&hash=fake",
	})
}

func (s *Server) mediaBase() string {
	if s.opts.MediaURL != "" {
		return s.opts.MediaURL
	}
	return s.srv.URL
}

// serveDownload serves a media URL: the bearer token is required there too.
func (s *Server) serveDownload(w http.ResponseWriter, r *http.Request, id string) {
	s.count("GET download")
	if r.Header.Get("Authorization") != "Bearer "+s.opts.AccessToken {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if s.opts.MediaRedirect != "" {
		http.Redirect(w, r, s.opts.MediaRedirect, http.StatusFound)
		return
	}
	s.mu.Lock()
	f, ok := s.media[id]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.mime)
	_, _ = w.Write(f.data)
}

// outBody is what the bot posts to /messages.
type outBody struct {
	MessagingProduct string `json:"messaging_product"`
	To               string `json:"to"`
	Type             string `json:"type"`
	Text             *struct {
		Body string `json:"body"`
	} `json:"text"`
	Template *struct {
		Name     string `json:"name"`
		Language struct {
			Code string `json:"code"`
		} `json:"language"`
		Components []struct {
			Type       string `json:"type"`
			Parameters []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"parameters"`
		} `json:"components"`
	} `json:"template"`
	CallbackData    string    `json:"biz_opaque_callback_data"`
	Document        *outMedia `json:"document"` // uploads.go
	Image           *outMedia `json:"image"`
	Status          string    `json:"status"`
	MessageID       string    `json:"message_id"`
	TypingIndicator *struct {
		Type string `json:"type"`
	} `json:"typing_indicator"`
}

func (s *Server) serveMessages(w http.ResponseWriter, r *http.Request) {
	var b outBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&b); err != nil {
		graphErr(w, http.StatusBadRequest, 100, "OAuthException", "(#100) Invalid JSON in the request body", "")
		return
	}
	if b.MessagingProduct != "whatsapp" {
		graphErr(w, http.StatusBadRequest, 100, "OAuthException", "(#100) The parameter messaging_product is required.", "")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.Status != "" {
		if b.Status != "read" {
			graphErr(w, http.StatusBadRequest, 100, "OAuthException", "(#100) Param status must be one of {READ}", "")
			return
		}
		if _, ok := s.inbound[b.MessageID]; !ok {
			graphErr(w, http.StatusBadRequest, 100, "OAuthException", "(#100) Invalid parameter", "message_id is not a received message")
			return
		}
		s.reads = append(s.reads, Read{MessageID: b.MessageID, Typing: b.TypingIndicator != nil && b.TypingIndicator.Type == "text", At: s.opts.Now()})
		s.notify()
		writeJSON(w, http.StatusOK, map[string]any{"success": true})
		return
	}
	if len(s.failNext) > 0 {
		f := s.failNext[0]
		s.failNext = s.failNext[1:]
		s.refused++
		s.notify()
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", fmt.Sprint(f.RetryAfter))
		}
		graphErr(w, f.HTTPStatus, f.Code, "OAuthException", f.Message, "")
		return
	}
	to := b.To
	if strings.Trim(to, "0123456789+") != "" || strings.TrimPrefix(to, "+") == "" {
		graphErr(w, http.StatusBadRequest, 100, "OAuthException", "(#100) Invalid parameter", "to is not a phone number")
		return
	}
	to = strings.TrimPrefix(to, "+")
	m := Sent{To: to, Type: b.Type, CallbackData: b.CallbackData}
	switch b.Type {
	case "text":
		if b.Text == nil || b.Text.Body == "" {
			graphErr(w, http.StatusBadRequest, 100, "OAuthException", "(#100) The parameter text['body'] is required.", "")
			return
		}
		if n := len([]rune(b.Text.Body)); n > 4096 {
			graphErr(w, http.StatusBadRequest, 100, "OAuthException", "(#100) Param text['body'] must be at most 4096 characters long.", "")
			return
		}
		if last, ok := s.lastUser[to]; !ok || s.opts.Now().Sub(last) > 24*time.Hour {
			s.refused++
			s.notify()
			graphErr(w, http.StatusBadRequest, 131047, "OAuthException", "(#131047) Re-engagement message",
				"Message failed to send because more than 24 hours have passed since the customer last replied to this number.")
			return
		}
		m.Text = b.Text.Body
	case "template":
		if b.Template == nil || b.Template.Name == "" || b.Template.Language.Code == "" {
			graphErr(w, http.StatusBadRequest, 100, "OAuthException", "(#100) The parameter template['name'] and template['language'] are required.", "")
			return
		}
		m.Template, m.Language = b.Template.Name, b.Template.Language.Code
		for _, c := range b.Template.Components {
			for _, p := range c.Parameters {
				if strings.ContainsAny(p.Text, "\n\t") || strings.Contains(p.Text, "     ") {
					graphErr(w, http.StatusBadRequest, 132018, "OAuthException", "(#132018) There was an issue with the parameters in your template.",
						"Param text cannot have new-line/tab characters or more than 4 consecutive spaces")
					return
				}
				if c.Type == "body" && m.Text == "" {
					m.Text = p.Text
				}
			}
		}
	case "document", "image":
		if !s.mediaMessageLocked(w, b, &m) { // uploads.go
			return
		}
	default:
		graphErr(w, http.StatusBadRequest, 131051, "OAuthException", "(#131051) Unsupported message type", "")
		return
	}
	s.seq++
	m.ID = fmt.Sprintf("wamid.BOT%08d", s.seq)
	s.sent = append(s.sent, m)
	s.notify()
	writeJSON(w, http.StatusOK, map[string]any{
		"messaging_product": "whatsapp",
		"contacts":          []map[string]string{{"input": b.To, "wa_id": to}},
		"messages":          []map[string]string{{"id": m.ID}},
	})
}

func graphErr(w http.ResponseWriter, status, code int, typ, msg, details string) {
	e := map[string]any{"message": msg, "type": typ, "code": code, "fbtrace_id": "AfakeTrace"}
	if details != "" {
		e["error_data"] = map[string]any{"messaging_product": "whatsapp", "details": details}
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Sender returns the wa_id of the user who wrote message id ("" if none).
func (s *Server) Sender(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inbound[id]
}
