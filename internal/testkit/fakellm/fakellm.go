// Package fakellm is a fake OpenAI-compatible chat-completions server for tests.
// It listens on 127.0.0.1 (net/http/httptest) and speaks the wire format the
// real github.com/sashabaranov/go-openai client reads, so code under test uses
// its production client pointed at Server.URL (which already ends in /v1).
//
// # Scripting
//
// Every POST /v1/chat/completions is decoded into a *Request, appended to the
// request log and answered by the server's Responder:
//
//	type Responder func(*Request) Response
//
// Ready-made responders:
//
//   - Echo() answers "echo: <last user text>" instantly (a leading
//     <runtime-context>…</runtime-context> block, as agent.ContextBuilder
//     writes it, is not echoed). Useful for other packages' tests.
//   - Queue(r1, r2, …) answers requests in order with the given responses;
//     once exhausted it answers HTTP 500 with a message saying so, so a test
//     that makes an unexpected extra call fails visibly.
//   - Match(Rule{When, Respond}, …) answers with the first matching rule
//     (helpers LastUserIs, AfterToolResult, Reply); no match → HTTP 500.
//   - A Responder is just a function, so a test may also match on
//     req.LastUserText(), req.ToolResults(), req.HasTools() … itself.
//     RejectTools(next) answers 400 whenever a request offers `tools`
//     (as endpoints without function calling do) and otherwise defers to next.
//
// # What a Response produces
//
// Streaming requests ("stream": true) get Server-Sent Events exactly as OpenAI
// sends them: a role chunk, reasoning_content deltas, content deltas
// (ContentChunks, or Content split every ChunkSize runes), tool-call deltas
// (id, type and function.name only in a call's first chunk, the arguments in
// ArgChunkSize fragments, every fragment tagged with the call's index), a chunk
// with finish_reason, then — when stream_options.include_usage is set — a
// final chunk with empty choices carrying usage, then "data: [DONE]". Every
// chunk carries "usage": null while include_usage is set, as OpenAI does.
// Non-streaming requests get one chat.completion object.
//
// Failure modes: Status >= 400 answers with OpenAI's error JSON
// ({"error":{"message","type","param","code"}}) and RetryAfter sets the
// Retry-After header; NoFinish / NoDone leave out the finish_reason chunk /
// the [DONE] line (a stream that ends early but cleanly); CutAfter > 0 aborts the TCP connection after that many
// chunks (a broken stream); StallAfter > 0 stops sending after that many
// chunks until the client goes away (idle-timeout and cancellation tests);
// Delay waits before the response headers; ChunkDelay / TokensPerSecond pace
// the chunks. All waits end when the client disconnects or the server closes.
//
// The request log (Requests, RequestCount) is safe for concurrent use.
package fakellm

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// ToolCall is one function call a scripted response asks for.
type ToolCall struct {
	ID        string // "" → "call_<n>"
	Name      string
	Arguments string // raw JSON text
}

// Usage is the token usage reported in the response. A nil *Usage in a
// Response means "estimate it" (about 4 bytes per token).
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// Response is what the server answers to one request.
type Response struct {
	Content       string
	ContentChunks []string // explicit content deltas; overrides Content
	ChunkSize     int      // runes per content delta when splitting Content (default 5)
	Reasoning     string   // sent as reasoning_content deltas before the content
	ToolCalls     []ToolCall
	ArgChunkSize  int    // runes per arguments fragment (default 7)
	FinishReason  string // default "tool_calls" when ToolCalls, else "stop"
	Usage         *Usage

	// Status >= 400 answers with an OpenAI error body instead.
	Status       int
	ErrorMessage string // default: the status text
	ErrorType    string // default "invalid_request_error" / "server_error" / "requests"
	ErrorCode    string // JSON null when empty
	ErrorParam   string // JSON null when empty
	RetryAfter   string // Retry-After header value, e.g. "2"

	Delay           time.Duration // before the response headers
	ChunkDelay      time.Duration // between chunks
	TokensPerSecond float64       // alternative pacing: one chunk per 1/TPS seconds
	CutAfter        int           // abort the connection after this many chunks
	StallAfter      int           // stop after this many chunks until the client leaves
	NoDone          bool          // omit the final "data: [DONE]" line
	NoFinish        bool          // omit the chunk carrying finish_reason

	// StreamError, when set, is an error reported inside the 200 stream
	// (in the server flavor's shape: see Flavor) after the role chunk and
	// StreamErrorAfter more chunks; nothing of the answer follows it.
	StreamError      *StreamErr
	StreamErrorAfter int
}

// StreamErr is an error a server reports inside a stream that had begun.
type StreamErr struct {
	Status  int    // the HTTP status the error stands for (flavors that send it as the code)
	Code    string // e.g. "model_not_found"; flavors with a numeric code send Status
	Type    string // e.g. "invalid_request_error"
	Message string
}

// Request is one decoded request the server received.
type Request struct {
	Body   openai.ChatCompletionRequest
	Raw    []byte
	Header http.Header
	Time   time.Time
	// Seq is the 1-based arrival number of the request.
	Seq int
}

// LastMessage is the last message of the request (zero value if none).
func (r *Request) LastMessage() openai.ChatCompletionMessage {
	if len(r.Body.Messages) == 0 {
		return openai.ChatCompletionMessage{}
	}
	return r.Body.Messages[len(r.Body.Messages)-1]
}

// MessageText is the text of m: Content, or its text parts joined.
func MessageText(m openai.ChatCompletionMessage) string {
	if m.Content != "" || len(m.MultiContent) == 0 {
		return m.Content
	}
	var parts []string
	for _, p := range m.MultiContent {
		if p.Type == openai.ChatMessagePartTypeText {
			parts = append(parts, p.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// LastUserText is the text of the last user message, without a leading
// <runtime-context>…</runtime-context> block.
func (r *Request) LastUserText() string {
	for i := len(r.Body.Messages) - 1; i >= 0; i-- {
		if m := r.Body.Messages[i]; m.Role == openai.ChatMessageRoleUser {
			return StripRuntimeContext(MessageText(m))
		}
	}
	return ""
}

// StripRuntimeContext removes a leading <runtime-context>…</runtime-context>
// block (and the blank line after it) from s.
func StripRuntimeContext(s string) string {
	const open, closing = "<runtime-context>", "</runtime-context>"
	if !strings.HasPrefix(strings.TrimLeft(s, " \n"), open) {
		return s
	}
	i := strings.Index(s, closing)
	if i < 0 {
		return s
	}
	return strings.TrimLeft(s[i+len(closing):], "\n")
}

// ToolResults are the role "tool" messages of the request, in order.
func (r *Request) ToolResults() []openai.ChatCompletionMessage {
	var out []openai.ChatCompletionMessage
	for _, m := range r.Body.Messages {
		if m.Role == openai.ChatMessageRoleTool {
			out = append(out, m)
		}
	}
	return out
}

// HasTools reports whether the request offers tools.
func (r *Request) HasTools() bool { return len(r.Body.Tools) > 0 }

// ToolNames lists the names of the offered tools.
func (r *Request) ToolNames() []string {
	var out []string
	for _, t := range r.Body.Tools {
		if t.Function != nil {
			out = append(out, t.Function.Name)
		}
	}
	return out
}

// SystemPrompt is the content of the first system message, if any.
func (r *Request) SystemPrompt() string {
	if len(r.Body.Messages) > 0 && r.Body.Messages[0].Role == openai.ChatMessageRoleSystem {
		return MessageText(r.Body.Messages[0])
	}
	return ""
}

// Responder decides the answer to one request. It may be called concurrently.
type Responder func(*Request) Response

// Echo answers "echo: <last user text>" instantly.
func Echo() Responder {
	return func(r *Request) Response { return Response{Content: "echo: " + r.LastUserText()} }
}

// Text answers every request with the same content.
func Text(s string) Responder {
	return func(*Request) Response { return Response{Content: s} }
}

// Queue answers requests in arrival order with rs; extra requests get HTTP 500.
func Queue(rs ...Response) Responder {
	var mu sync.Mutex
	next := 0
	return func(*Request) Response {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(rs) {
			return Response{Status: http.StatusInternalServerError,
				ErrorMessage: fmt.Sprintf("fakellm: script exhausted: request %d but only %d responses queued", next+1, len(rs))}
		}
		r := rs[next]
		next++
		return r
	}
}

// Rule is one case of Match: when When returns true, Respond answers.
type Rule struct {
	When    func(*Request) bool
	Respond func(*Request) Response
}

// Match answers with the first rule whose When holds; no match → HTTP 500
// naming the last user text, so an unexpected request fails the test visibly.
func Match(rules ...Rule) Responder {
	return func(r *Request) Response {
		for _, rule := range rules {
			if rule.When == nil || rule.When(r) {
				return rule.Respond(r)
			}
		}
		return Response{Status: http.StatusInternalServerError,
			ErrorMessage: fmt.Sprintf("fakellm: no rule matched the request (last user text %q)", r.LastUserText())}
	}
}

// LastUserIs matches requests whose last user text equals s.
func LastUserIs(s string) func(*Request) bool {
	return func(r *Request) bool { return r.LastUserText() == s }
}

// AfterToolResult matches requests whose last message is a tool result.
func AfterToolResult(r *Request) bool { return r.LastMessage().Role == openai.ChatMessageRoleTool }

// Reply is a Respond func that always answers resp.
func Reply(resp Response) func(*Request) Response { return func(*Request) Response { return resp } }

// RejectTools answers 400 (as endpoints without function calling do) to any
// request that offers tools and defers to next otherwise.
func RejectTools(next Responder) Responder {
	return func(r *Request) Response {
		if r.HasTools() {
			return Response{Status: http.StatusBadRequest, ErrorParam: "tools",
				ErrorMessage: "tools is not supported by this model (function calling unavailable)"}
		}
		return next(r)
	}
}

// Server is the running fake.
type Server struct {
	// URL is the base URL to give the client, ending in /v1.
	URL string

	ts   *httptest.Server
	done chan struct{}
	once sync.Once

	mu        sync.Mutex
	responder Responder
	requests  []*Request

	flavor Flavor
	apiKey string // "" = any credentials accepted
}

// New starts a server answering with r (nil → Echo()).
func New(r Responder) *Server { return NewFlavor(OpenAI, r) }

// NewFlavor starts a server that speaks flavor f's dialect (flavor.go);
// for Azure, URL is the deployment's base URL with its api-version query.
func NewFlavor(f Flavor, r Responder) *Server {
	if r == nil {
		r = Echo()
	}
	s := &Server{responder: r, done: make(chan struct{}), flavor: f}
	mux := http.NewServeMux()
	if f == Azure {
		mux.HandleFunc("POST "+azurePath, s.handleChat)
	} else {
		mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	}
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"fake-model","object":"model","created":0,"owned_by":"fakellm"}]}`)
	})
	s.ts = httptest.NewUnstartedServer(mux)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("fakellm: listen: %v", err))
	}
	s.ts.Listener = ln
	s.ts.Start()
	s.URL = s.ts.URL + "/v1"
	if f == Azure {
		s.URL = s.ts.URL + "/openai/deployments/" + AzureDeployment + "?api-version=" + AzureAPIVersion
	}
	return s
}

// Start is New plus tb.Cleanup(Close).
func Start(tb testing.TB, r Responder) *Server {
	tb.Helper()
	s := New(r)
	tb.Cleanup(s.Close)
	return s
}

// StartFlavor is NewFlavor plus tb.Cleanup(Close).
func StartFlavor(tb testing.TB, f Flavor, r Responder) *Server {
	tb.Helper()
	s := NewFlavor(f, r)
	tb.Cleanup(s.Close)
	return s
}

// RequireKey makes the server refuse (401, in its flavor's shape) requests
// without key in the flavor's credential header: Authorization: Bearer,
// or api-key for Azure.
func (s *Server) RequireKey(key string) {
	s.mu.Lock()
	s.apiKey = key
	s.mu.Unlock()
}

// Flavor is the dialect the server speaks.
func (s *Server) Flavor() Flavor { return s.flavor }

// SetResponder replaces the responder for later requests.
func (s *Server) SetResponder(r Responder) {
	s.mu.Lock()
	s.responder = r
	s.mu.Unlock()
}

// HTTPClient is a client suitable for the server (plain loopback transport).
func (s *Server) HTTPClient() *http.Client { return s.ts.Client() }

// Close releases stalled responses and stops the server. Idempotent.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.ts.CloseClientConnections()
		s.ts.Close()
	})
}

// Requests returns a copy of the request log.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// RequestCount is the number of requests received so far.
func (s *Server) RequestCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// LastRequest is the most recent request (nil if none).
func (s *Server) LastRequest() *Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return nil
	}
	return s.requests[len(s.requests)-1]
}

func (s *Server) handleChat(w http.ResponseWriter, hr *http.Request) {
	raw, err := io.ReadAll(hr.Body)
	if err != nil {
		s.writeError(w, Response{Status: http.StatusBadRequest, ErrorMessage: "fakellm: reading body: " + err.Error()})
		return
	}
	req := &Request{Raw: raw, Header: hr.Header.Clone(), Time: time.Now()}
	if err := json.Unmarshal(raw, &req.Body); err != nil {
		s.writeError(w, Response{Status: http.StatusBadRequest, ErrorMessage: "fakellm: invalid JSON body: " + err.Error()})
		return
	}
	var withUsage bool
	var probe struct {
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if json.Unmarshal(raw, &probe) == nil && probe.StreamOptions != nil {
		withUsage = probe.StreamOptions.IncludeUsage
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	req.Seq = len(s.requests)
	responder := s.responder
	key := s.apiKey
	s.mu.Unlock()

	if refusal, ok := s.checkRequest(hr, key); !ok {
		s.writeError(w, refusal)
		return
	}
	resp := responder(req)
	if !s.wait(hr, resp.Delay) {
		return
	}
	if resp.Status >= 400 {
		s.writeError(w, resp)
		return
	}
	model := req.Body.Model
	if req.Body.Stream {
		s.stream(w, hr, req, resp, model, withUsage)
		return
	}
	writeCompletion(w, req, resp, model)
}

// wait sleeps d unless the client leaves or the server closes; false = give up.
func (s *Server) wait(hr *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-hr.Context().Done():
		return false
	case <-s.done:
		return false
	}
}
