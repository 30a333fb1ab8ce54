package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// One streamed chat-completions call over HTTP: the request written by
// encodeCache (wire.go), the answer read by sseStream (sse.go), errors as
// go-openai reports them (*openai.APIError, *openai.RequestError, its
// request-validation errors), so classify and rejectsTools read them
// unchanged. go-openai's types stay the agent's vocabulary for messages and
// tools; only its per-call encoding and decoding are replaced, as the load
// profile showed them to be the agent's largest cost per message.

// chatStream is an open streamed answer. Close ends it (dropping the
// connection when the answer was not read to its end) and recycles its
// buffers.
type chatStream struct {
	resp *http.Response
	sse  *sseStream
}

func (s *chatStream) Recv(c *streamChunk) error { return s.sse.Recv(c) }

func (s *chatStream) Close() {
	s.resp.Body.Close()
	s.sse.Close()
}

// chatCompletionsDisabled are the models go-openai refuses on
// /chat/completions before sending (completion-only models, long shut down).
var chatCompletionsDisabled = map[string]bool{
	"code-davinci-002": true, "code-cushman-001": true, "code-davinci-001": true,
	"text-davinci-003": true, "text-davinci-002": true, "text-curie-001": true,
	"text-babbage-001": true, "text-ada-001": true, "text-davinci-001": true,
	"davinci-instruct-beta": true, "davinci": true, "curie-instruct-beta": true,
	"curie": true, "ada": true, "babbage": true,
}

// openStream sends req and returns the stream once the server answered 2xx.
func (p *Provider) openStream(ctx context.Context, req ChatRequest) (*chatStream, error) {
	creq := completionRequest(req)
	creq.Stream = true
	if chatCompletionsDisabled[creq.Model] {
		return nil, openai.ErrChatCompletionInvalidModel
	}
	if err := openai.NewReasoningValidator().Validate(creq); err != nil {
		return nil, err
	}
	raw, err := p.enc.appendRequest(make([]byte, 0, p.bodySize.Load()+bodySlack), &creq, requestTemperature(req))
	if err != nil {
		return nil, err
	}
	p.bodySize.Store(min(int64(len(raw)), maxBodyHint))
	// A *bytes.Reader is a body net/http knows to be in memory: it writes
	// the headers and the body into its buffer and sends them in one write.
	// (A reader of its own made the transport flush the headers alone, then
	// copy the body through a buffer allocated for each call.)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	hreq.Header = p.header.Clone()
	resp, err := p.doer.Do(hreq)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
		err := errorResponse(resp)
		resp.Body.Close()
		return nil, err
	}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "text/html") {
		// A proxy's sign-in or error page: say so rather than "connection
		// cut" after reading it as a stream. Transient (a transport problem,
		// as a cut stream is), so retries and failover apply.
		resp.Body.Close()
		return nil, fmt.Errorf("the endpoint answered HTTP %d %s, not an event stream (a proxy's sign-in or error page?)",
			resp.StatusCode, clipContentType(ct))
	}
	return &chatStream{resp: resp, sse: newSSEStream(resp.Body)}, nil
}

// The request buffer is sized from the last request's body (bodySize) plus
// bodySlack, so it rarely grows while it is written; a huge one does not
// size the next.
const (
	bodySlack   = 1 << 10
	maxBodyHint = 256 << 10
)

// requestHeader is what go-openai sends with a streamed call: the key as
// Authorization: Bearer, or — for an Azure OpenAI deployment URL
// (isAzureBase) — in the api-key header Azure reads.
func requestHeader(apiKey string, azure bool) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	switch {
	case apiKey == "":
	case azure:
		h.Set("Api-Key", apiKey)
	default:
		h.Set("Authorization", "Bearer "+apiKey)
	}
	return h
}

// isAzureBase reports whether base (llm.base_url without its query) is an
// Azure OpenAI deployment, https://NAME.openai.azure.com/openai/deployments/DEP:
// its path holds /openai/deployments/.
func isAzureBase(base string) bool {
	if u, err := url.Parse(base); err == nil {
		return strings.Contains(u.Path+"/", "/openai/deployments/")
	}
	return false
}

// errorResponse reads a failed response as go-openai does: an *APIError
// when the body is OpenAI's {"error":{…}}, a *RequestError otherwise.
func errorResponse(resp *http.Response) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("error, reading response body: %w", err)
	}
	var errRes openai.ErrorResponse
	err = json.Unmarshal(body, &errRes)
	if err != nil || errRes.Error == nil {
		if apiErr := otherAPIError(body); apiErr != nil {
			apiErr.HTTPStatus, apiErr.HTTPStatusCode = resp.Status, resp.StatusCode
			return apiErr
		}
		reqErr := &openai.RequestError{HTTPStatus: resp.Status, HTTPStatusCode: resp.StatusCode, Err: err, Body: body}
		if errRes.Error != nil {
			reqErr.Err = errRes.Error
		}
		return reqErr
	}
	errRes.Error.HTTPStatus = resp.Status
	errRes.Error.HTTPStatusCode = resp.StatusCode
	return errRes.Error
}

// otherAPIError reads the error bodies of servers that do not wrap theirs
// as OpenAI does: vLLM's {"object":"error","message",…,"code"} and
// {"error":"<message>"} (Ollama's native shape, some gateways); nil for
// anything else.
func otherAPIError(body []byte) *openai.APIError {
	body = bytes.TrimSpace(body)
	if isObjectError(body) {
		var a openai.APIError
		if json.Unmarshal(body, &a) == nil && a.Message != "" {
			return &a
		}
		return nil
	}
	var plain struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &plain) == nil && plain.Error != "" {
		return &openai.APIError{Message: plain.Error}
	}
	return nil
}

// clipContentType keeps a Content-Type header short and printable for an
// error message.
func clipContentType(ct string) string {
	ct, _, _ = strings.Cut(ct, ";")
	ct = strings.TrimSpace(ct)
	if len(ct) > 40 {
		ct = ct[:40]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, ct)
}
