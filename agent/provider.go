package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	redacturl "github.com/switchboard-bot/switchboard/internal/redact"
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

// Provider calls an OpenAI-compatible chat-completions endpoint through
// go-openai, streaming, with the retry policy of DESIGN.md §3.
type Provider struct {
	client *openai.Client
	opts   Options
	log    *slog.Logger
}

// NewProvider builds a provider from o (defaults applied).
func NewProvider(o Options) *Provider {
	o = o.withDefaults()
	cfg := openai.DefaultConfig(o.APIKey)
	var query string // a gateway's ?api-key=… in llm.base_url, sent with every call
	if o.BaseURL != "" {
		// go-openai appends "/chat/completions" to the base URL as text,
		// which would put the path inside the query: keep the query apart.
		base, q, _ := strings.Cut(o.BaseURL, "?")
		cfg.BaseURL, query = strings.TrimRight(base, "/"), q
	}
	hc := o.HTTPClient
	if hc == nil {
		// Turns run concurrently against one endpoint: net/http's default of
		// 2 idle connections per host made every further concurrent call open
		// (and TLS-handshake) a new connection and close it afterwards.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		hc = &http.Client{Transport: tr}
	}
	cfg.HTTPClient = headerCapturingDoer{c: hc, query: query}
	return &Provider{client: openai.NewClientWithConfig(cfg), opts: o, log: o.Logger}
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

// Chat runs one model call with retries. Errors are *ModelError (after the
// retry policy), ErrModelNotConfigured, or ctx's error.
func (p *Provider) Chat(ctx context.Context, req ChatRequest, obs StreamObserver) (ChatResponse, error) {
	if err := p.configured(); err != nil {
		return ChatResponse{}, err
	}
	for attempt := 1; ; attempt++ {
		if obs.State != nil {
			obs.State(InnerCalling)
		}
		hdr := &respHeaders{}
		emitted := false
		resp, err := p.once(context.WithValue(ctx, respHeadersKey{}, hdr), req, obs, &emitted)
		if err == nil {
			resp.Attempts = attempt
			return resp, nil
		}
		if ctx.Err() != nil {
			return ChatResponse{}, fmt.Errorf("model call: %w", ctx.Err())
		}
		// The endpoint URL in Go's HTTP errors keeps its query and user
		// info (llm.base_url may carry ?api-key=…): nothing below — the retry
		// log line, ModelError, the turn's log and /status — sees either.
		err = redact(redacturl.Error(err), p.opts.APIKey)
		kind, status, retryable := classify(err)
		retryAfter := hdr.retryAfter(p.opts.Now())
		merr := &ModelError{Kind: kind, Status: status, Attempts: attempt, RetryAfter: retryAfter, Err: err}
		if !retryable || attempt > p.opts.MaxRetries || retryAfter > p.opts.MaxRetryAfter {
			return ChatResponse{}, merr
		}
		wait := backoff(p.opts.RetryBase, p.opts.RetryMax, attempt)
		if retryAfter > wait {
			wait = retryAfter
		}
		p.log.LogAttrs(ctx, slog.LevelWarn, "model call failed; retrying",
			slog.String("kind", kind), slog.Int("status", status), slog.Int("attempt", attempt),
			slog.Duration("wait", wait), slog.String("error", err.Error()))
		if emitted && obs.Discard != nil {
			obs.Discard()
		}
		if obs.State != nil {
			obs.State(InnerRetrying)
		}
		if err := p.opts.Sleep(ctx, wait); err != nil {
			return ChatResponse{}, fmt.Errorf("model call: %w", err)
		}
	}
}

// backoff is base·2^(attempt-1), capped at maxWait.
func backoff(base, maxWait time.Duration, attempt int) time.Duration {
	d := float64(base) * math.Pow(2, float64(attempt-1))
	if d > float64(maxWait) || math.IsInf(d, 0) {
		return maxWait
	}
	return time.Duration(d)
}

func isReasoningModel(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

// once is one attempt: open the stream and read it to the end.
func (p *Provider) once(ctx context.Context, req ChatRequest, obs StreamObserver, emitted *bool) (ChatResponse, error) {
	creq := openai.ChatCompletionRequest{
		Model:         req.Model,
		Messages:      req.Messages,
		Tools:         req.Tools,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	}
	if isReasoningModel(req.Model) {
		creq.MaxCompletionTokens = req.MaxTokens
	} else {
		creq.MaxTokens = req.MaxTokens
		if req.Temperature != nil {
			creq.Temperature = *req.Temperature
		}
	}

	// Timeout bounds the whole attempt: the wait for the first chunk and the
	// stream to its end, so a stream that trickles a byte now and then cannot
	// outlive it. StreamIdleTimeout bounds every gap between chunks.
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var streaming atomic.Bool
	whole := time.AfterFunc(p.opts.Timeout, func() {
		if streaming.Load() {
			cancel(errCallTimeout)
		} else {
			cancel(errFirstChunk)
		}
	})
	defer whole.Stop()
	var idle *time.Timer // started at the first chunk; used from this goroutine only
	defer func() {
		if idle != nil {
			idle.Stop()
		}
	}()
	cause := func(err error) error {
		if c := context.Cause(actx); c != nil && ctx.Err() == nil &&
			(errors.Is(c, errStreamIdle) || errors.Is(c, errFirstChunk) || errors.Is(c, errCallTimeout)) {
			return fmt.Errorf("%w (%v)", c, err)
		}
		return err
	}

	stream, err := p.client.CreateChatCompletionStream(actx, creq)
	if err != nil {
		return ChatResponse{}, cause(err)
	}
	defer stream.Close()

	var (
		out    ChatResponse
		text   strings.Builder
		reason strings.Builder
		merger toolCallMerger
		usage  *openai.Usage
	)
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return ChatResponse{}, cause(err)
		}
		if !streaming.Load() {
			streaming.Store(true)
			if obs.State != nil {
				obs.State(InnerStreaming)
			}
		}
		if idle == nil {
			idle = time.AfterFunc(p.opts.StreamIdleTimeout, func() { cancel(errStreamIdle) })
		} else {
			idle.Reset(p.opts.StreamIdleTimeout)
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			d := ch.Delta
			if d.ReasoningContent != "" {
				reason.WriteString(d.ReasoningContent)
				if obs.Reasoning != nil {
					obs.Reasoning(d.ReasoningContent)
				}
			}
			if d.Content != "" {
				text.WriteString(d.Content)
				*emitted = true
				if obs.Text != nil {
					obs.Text(d.Content)
				}
			}
			for _, tc := range d.ToolCalls {
				merger.add(tc)
			}
			if ch.FinishReason != "" && ch.FinishReason != openai.FinishReasonNull {
				out.FinishReason = string(ch.FinishReason)
			}
		}
	}
	if out.FinishReason == "" {
		return ChatResponse{}, errStreamTruncated
	}
	out.Content = text.String()
	out.Reasoning = reason.String()
	out.ToolCalls = merger.result()
	if usage != nil {
		out.Usage = memory.Usage{PromptTokens: usage.PromptTokens, CompletionTokens: usage.CompletionTokens, TotalTokens: usage.TotalTokens}
		if out.Usage.TotalTokens == 0 {
			out.Usage.TotalTokens = out.Usage.PromptTokens + out.Usage.CompletionTokens
		}
	} else {
		out.Usage = estimateUsage(req.Messages, out)
	}
	return out, nil
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
