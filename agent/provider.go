package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	redacturl "github.com/switchboard-bot/switchboard/internal/redact"
	"github.com/switchboard-bot/switchboard/internal/retry"
	"github.com/switchboard-bot/switchboard/memory"
)

// ChatRequest is one model call.
type ChatRequest struct {
	Model       string
	Messages    []openai.ChatCompletionMessage
	Tools       []openai.Tool // nil = no tools offered
	Temperature *float32
	MaxTokens   int
}

// ChatResponse is the merged result of one streamed model call.
type ChatResponse struct {
	Content      string
	Reasoning    string
	ToolCalls    []memory.ToolCall
	FinishReason string
	Usage        memory.Usage
	Attempts     int
	// Model is the model that answered (the request's, or a fallback's
	// after a failover); Endpoint names the configured endpoint that
	// answered ("primary", "fallback 1", …).
	Model    string
	Endpoint string
	// Cut says the answer passed Options.MaxResponseChars: the rest was not
	// read, Content ends with a marker saying so, FinishReason is "length"
	// and tool calls (possibly cut mid-arguments) are dropped.
	Cut bool
}

// StreamObserver receives what happens during Chat. All callbacks run on the
// caller's goroutine; nil callbacks are skipped.
type StreamObserver struct {
	Text      func(delta string)
	Reasoning func(delta string)
	// Discard says the text streamed so far came from an attempt that failed
	// and is being retried: a streaming consumer should drop it.
	Discard func()
	State   func(s InnerState)
}

// Provider calls an OpenAI-compatible chat-completions endpoint, streaming,
// with the retry policy of DESIGN.md §3. Requests and answers use go-openai's
// types; the call itself is chatcall.go's (encoding and decoding per call
// were the agent's largest cost per message).
type Provider struct {
	doer   headerCapturingDoer
	url    string      // <base>/chat/completions, without the base URL's query
	header http.Header // sent with every call (cloned per request)
	enc    encodeCache
	opts   Options
	log    *slog.Logger
	// bodySize is the last request body's length (chatcall.go sizes the
	// next buffer from it).
	bodySize atomic.Int64
}

// NewProvider builds a provider from o (defaults applied).
func NewProvider(o Options) *Provider {
	o = o.withDefaults()
	base := openai.DefaultConfig("").BaseURL
	var query string // a gateway's ?api-key=… in llm.base_url, sent with every call
	if o.BaseURL != "" {
		// "/chat/completions" is appended to the base URL as text, which
		// would put the path inside the query: keep the query apart.
		var q string
		base, q, _ = strings.Cut(o.BaseURL, "?")
		query = q
	}
	hc := o.HTTPClient
	if hc == nil {
		// Turns run concurrently against one endpoint: net/http's default of
		// 2 idle connections per host made every further concurrent call open
		// (and TLS-handshake) a new connection and close it afterwards.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		// A request (system prompt and history, several KiB) goes out in one
		// write: with the default 4 KiB buffer the rest went through a copy
		// buffer allocated per call, and a second write.
		tr.WriteBufferSize = 32 << 10
		hc = &http.Client{Transport: tr}
	}
	return &Provider{doer: headerCapturingDoer{c: hc, query: query}, url: strings.TrimRight(base, "/") + "/chat/completions",
		header: requestHeader(o.APIKey, isAzureBase(base)), opts: o, log: o.Logger}
}

// String names the endpoint without the API key.
func (p *Provider) String() string {
	return fmt.Sprintf("agent.Provider{BaseURL:%q Model:%q}", redacturl.URL(p.opts.BaseURL), p.opts.Model)
}

// configured reports whether a call can be attempted at all.
func (p *Provider) configured() error {
	if p.opts.APIKey == "" && p.opts.BaseURL == "" {
		return fmt.Errorf("agent: model call: %w", ErrModelNotConfigured)
	}
	return nil
}

// Chat runs one model call with retries (the retry policy of DESIGN.md §3,
// on internal/retry: RetryBase doubling up to RetryMax, no jitter, at least
// the Retry-After the endpoint asked for). Errors are *ModelError (after the
// retry policy), ErrModelNotConfigured, or ctx's error.
func (p *Provider) Chat(ctx context.Context, req ChatRequest, obs StreamObserver) (ChatResponse, error) {
	if err := p.configured(); err != nil {
		return ChatResponse{}, err
	}
	var (
		resp    ChatResponse
		attempt int
		emitted bool
	)
	policy := retry.Policy{Initial: p.opts.RetryBase, Max: p.opts.RetryMax, MaxTries: max(p.opts.MaxRetries, 0) + 1,
		Sleep: p.opts.Sleep,
		OnRetry: func(n int, wait time.Duration, err error) {
			var merr *ModelError
			errors.As(err, &merr)
			p.log.LogAttrs(ctx, slog.LevelWarn, "model call failed; retrying",
				slog.String("kind", merr.Kind), slog.Int("status", merr.Status), slog.Int("attempt", n),
				slog.Duration("wait", wait), slog.String("error", merr.Err.Error()))
			if emitted && obs.Discard != nil {
				obs.Discard()
			}
			if obs.State != nil {
				obs.State(InnerRetrying)
			}
		}}
	err := retry.Do(ctx, policy, func(ctx context.Context) error {
		attempt++
		if obs.State != nil {
			obs.State(InnerCalling)
		}
		hdr := &respHeaders{}
		emitted = false
		r, err := p.once(context.WithValue(ctx, respHeadersKey{}, hdr), req, obs, &emitted)
		if err == nil {
			resp = r
			resp.Attempts = attempt
			return nil
		}
		if ctx.Err() != nil {
			return retry.Permanent(err)
		}
		// The endpoint URL in Go's HTTP errors keeps its query and user
		// info (llm.base_url may carry ?api-key=…): nothing below — the retry
		// log line, ModelError, the turn's log and /status — sees either.
		err = redact(redacturl.Error(err), p.opts.APIKey)
		kind, status, retryable := classify(err)
		retryAfter := hdr.retryAfter(p.opts.Now())
		msg, inStream := serverMessage(err, status, p.opts.APIKey)
		merr := &ModelError{Kind: kind, Status: status, Attempts: attempt, RetryAfter: retryAfter,
			Message: msg, InStream: inStream, Err: err}
		if !retryable || retryAfter > p.opts.MaxRetryAfter {
			return retry.Permanent(merr)
		}
		return retry.After(retryAfter, merr)
	})
	switch {
	case err == nil:
		return resp, nil
	case ctx.Err() != nil: // cancelled during a call or a wait
		return ChatResponse{}, fmt.Errorf("model call: %w", ctx.Err())
	}
	return ChatResponse{}, err
}

func isReasoningModel(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

// once is one attempt: open the stream and read it to the end, or until the
// answer passes MaxResponseChars (then the rest is not read: see streamAcc).
func (p *Provider) once(ctx context.Context, req ChatRequest, obs StreamObserver, emitted *bool) (ChatResponse, error) {
	// Timeout bounds the whole attempt: the wait for the first chunk and the
	// stream to its end, so a stream that trickles a byte now and then cannot
	// outlive it. StreamIdleTimeout bounds every gap between chunks.
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timers := startAttemptTimers(cancel, p.opts.Timeout, p.opts.StreamIdleTimeout)
	defer timers.stop()
	cause := func(err error) error { return attemptError(ctx, actx, err) }

	stream, err := p.openStream(actx, req)
	if err != nil {
		return ChatResponse{}, cause(err)
	}
	// Closing the stream before its end drops the connection: the server
	// sees the client go away and stops generating.
	defer stream.Close()

	acc := streamAcc{limit: p.opts.MaxResponseChars}
	var chunk streamChunk
	for !acc.cut {
		err := stream.Recv(&chunk)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return ChatResponse{}, cause(err)
		}
		if timers.chunk() && obs.State != nil {
			obs.State(InnerStreaming)
		}
		acc.add(&chunk, obs, emitted)
	}
	if acc.cut {
		p.log.LogAttrs(ctx, slog.LevelWarn, "model answer cut: it was longer than llm.max_response_chars",
			slog.String("model", req.Model), slog.Int("max_response_chars", acc.limit))
	} else if acc.finish == "" {
		return ChatResponse{}, errStreamTruncated
	} else if acc.finish == finishError {
		// OpenRouter ends a failed generation so when no error object came.
		return ChatResponse{}, &StreamError{APIError: &openai.APIError{Message: `the model stream ended with finish_reason "error"`}}
	}
	out := acc.response()
	out.Usage = callUsage(acc.usage, req.Messages, out)
	return out, nil
}

// maxCallTokens caps each count one call reports: no model reads or
// writes four billion tokens in one call, and the usage book and the
// budgets sum these counts.
const maxCallTokens = 1 << 32

// callUsage is the usage a call counts: what the server reported, each
// count capped at maxCallTokens; estimated (about 4 bytes a token) when it
// reported none, a negative count, or only zeros, so a budget bounds a
// server that does not count (or lies) too.
func callUsage(u *openai.Usage, msgs []openai.ChatCompletionMessage, out ChatResponse) memory.Usage {
	if u == nil || u.PromptTokens < 0 || u.CompletionTokens < 0 || (u.PromptTokens == 0 && u.CompletionTokens == 0 && u.TotalTokens <= 0) {
		return estimateUsage(msgs, out)
	}
	r := memory.Usage{PromptTokens: min(u.PromptTokens, maxCallTokens), CompletionTokens: min(u.CompletionTokens, maxCallTokens)}
	r.TotalTokens = r.PromptTokens + r.CompletionTokens
	if r.TotalTokens == 0 { // only a total: counted as prompt tokens
		r.PromptTokens = min(u.TotalTokens, maxCallTokens)
		r.TotalTokens = r.PromptTokens
	}
	return r
}

// requestTemperature is the temperature a call sends: req's, even 0; none
// for a reasoning model (they refuse any but their default) or when unset.
func requestTemperature(req ChatRequest) *float32 {
	if req.Temperature == nil || isReasoningModel(req.Model) {
		return nil
	}
	return req.Temperature
}

// finishError is the finish reason OpenRouter gives a generation that failed
// mid-stream.
const finishError = "error"

// completionRequest is the streamed go-openai request for req.
func completionRequest(req ChatRequest) openai.ChatCompletionRequest {
	creq := openai.ChatCompletionRequest{
		Model:         req.Model,
		Messages:      req.Messages,
		Tools:         req.Tools,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	}
	if isReasoningModel(req.Model) {
		creq.MaxCompletionTokens = req.MaxTokens
	} else {
		//lint:ignore SA1019 OpenAI-compatible servers (Ollama, vLLM, llama.cpp) read only max_tokens, not max_completion_tokens.
		creq.MaxTokens = req.MaxTokens
		if req.Temperature != nil {
			creq.Temperature = *req.Temperature
		}
	}
	return creq
}

// attemptTimers bound one attempt: the whole attempt (Timeout) and, from the
// first chunk on, every gap between chunks (StreamIdleTimeout). When one
// fires it cancels the attempt's context with the matching cause.
type attemptTimers struct {
	cancel      context.CancelCauseFunc
	idleTimeout time.Duration
	streaming   atomic.Bool
	whole       *time.Timer
	idle        *time.Timer // started at the first chunk; used from the reading goroutine only
}

func startAttemptTimers(cancel context.CancelCauseFunc, timeout, idleTimeout time.Duration) *attemptTimers {
	t := &attemptTimers{cancel: cancel, idleTimeout: idleTimeout}
	t.whole = time.AfterFunc(timeout, func() {
		if t.streaming.Load() {
			cancel(errCallTimeout)
		} else {
			cancel(errFirstChunk)
		}
	})
	return t
}

// chunk notes that a chunk arrived and restarts the idle timer; it reports
// whether this was the first chunk.
func (t *attemptTimers) chunk() (first bool) {
	if !t.streaming.Load() {
		t.streaming.Store(true)
		first = true
	}
	if t.idle == nil {
		t.idle = time.AfterFunc(t.idleTimeout, func() { t.cancel(errStreamIdle) })
	} else {
		t.idle.Reset(t.idleTimeout)
	}
	return first
}

func (t *attemptTimers) stop() {
	t.whole.Stop()
	if t.idle != nil {
		t.idle.Stop()
	}
}

// attemptError names the attempt's own timeout in err when one of
// attemptTimers ended the attempt (and not the caller's ctx).
func attemptError(ctx, actx context.Context, err error) error {
	if c := context.Cause(actx); c != nil && ctx.Err() == nil &&
		(errors.Is(c, errStreamIdle) || errors.Is(c, errFirstChunk) || errors.Is(c, errCallTimeout)) {
		return fmt.Errorf("%w (%v)", c, err)
	}
	return err
}

// estimateUsage guesses usage (≈4 bytes per token) for servers that do not
// report it, so token budgets still bite.
func estimateUsage(msgs []openai.ChatCompletionMessage, out ChatResponse) memory.Usage {
	in := 0
	for _, m := range msgs {
		in += len(m.Content) + len(m.Role) + 4
		for _, p := range m.MultiContent {
			in += len(p.Text) + 256
		}
		for _, tc := range m.ToolCalls {
			in += len(tc.Function.Name) + len(tc.Function.Arguments)
		}
	}
	o := len(out.Content) + len(out.Reasoning)
	for _, tc := range out.ToolCalls {
		o += len(tc.Name) + len(tc.Arguments)
	}
	u := memory.Usage{PromptTokens: in/4 + 1, CompletionTokens: o/4 + 1}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// headerCapturingDoer records the headers of failed responses (Retry-After)
// into the per-attempt holder carried by the request context: go-openai's
// error types do not keep them. It also adds the base URL's query.
type headerCapturingDoer struct {
	c     *http.Client
	query string // raw query of llm.base_url, "" for none
}

type respHeadersKey struct{}

type respHeaders struct {
	mu sync.Mutex
	h  http.Header
}

func (d headerCapturingDoer) Do(req *http.Request) (*http.Response, error) {
	if d.query != "" {
		if req.URL.RawQuery == "" {
			req.URL.RawQuery = d.query
		} else {
			req.URL.RawQuery += "&" + d.query
		}
	}
	resp, err := d.c.Do(req)
	if err == nil && resp.StatusCode >= 400 {
		if h, ok := req.Context().Value(respHeadersKey{}).(*respHeaders); ok {
			h.mu.Lock()
			h.h = resp.Header.Clone()
			h.mu.Unlock()
		}
	}
	return resp, err
}

// retryAfter is what the last failed response asked us to wait (0 if nothing).
func (h *respHeaders) retryAfter(now time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.h == nil {
		return 0
	}
	return parseRetryAfter(h.h, now)
}

func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 && secs < 1e6 {
			return time.Duration(secs * float64(time.Second))
		}
		if t, err := http.ParseTime(v); err == nil {
			if d := t.Sub(now); d > 0 {
				return d
			}
			return 0
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e9 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	var longest time.Duration
	for _, k := range []string{"X-Ratelimit-Reset-Requests", "X-Ratelimit-Reset-Tokens"} {
		if d, err := time.ParseDuration(strings.TrimSpace(h.Get(k))); err == nil && d > longest {
			longest = d
		}
	}
	return longest
}
