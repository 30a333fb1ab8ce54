package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

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
	body *pooledBody
}

func (s *chatStream) Recv(c *streamChunk) error { return s.sse.Recv(c) }

func (s *chatStream) Close() {
	s.resp.Body.Close()
	s.sse.Close()
	s.body.release()
}

// reqBuf is a pooled request body.
type reqBuf struct{ b []byte }

// pooledBody hands a request body to net/http and puts its buffer back in
// bodyPool once nothing reads it any more: the call is over (the caller's
// reference) and the transport closed every reader it was given (it may
// still be writing the body when the answer arrives, and may ask GetBody
// for another reader to retry on a fresh connection).
type pooledBody struct {
	buf  *reqBuf
	refs atomic.Int32
}

func newPooledBody(buf *reqBuf) *pooledBody {
	pb := &pooledBody{buf: buf}
	pb.refs.Store(1)
	return pb
}

// reader is a new reader of the body, holding a reference until closed.
func (pb *pooledBody) reader() io.ReadCloser {
	pb.refs.Add(1)
	return &bodyReader{Reader: bytes.NewReader(pb.buf.b), pb: pb}
}

func (pb *pooledBody) release() {
	if pb.refs.Add(-1) == 0 && cap(pb.buf.b) <= maxPooledBody {
		pb.buf.b = pb.buf.b[:0]
		bodyPool.Put(pb.buf)
	}
}

type bodyReader struct {
	*bytes.Reader
	pb     *pooledBody
	closed atomic.Bool
}

func (r *bodyReader) Close() error {
	if !r.closed.Swap(true) {
		r.pb.release()
	}
	return nil
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
	buf := bodyPool.Get().(*reqBuf)
	raw, err := p.enc.appendRequest(buf.b[:0], &creq)
	if err != nil {
		bodyPool.Put(buf)
		return nil, err
	}
	buf.b = raw
	body := newPooledBody(buf)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, nil)
	if err != nil {
		body.release()
		return nil, err
	}
	hreq.Body, hreq.ContentLength = body.reader(), int64(len(raw))
	hreq.GetBody = func() (io.ReadCloser, error) { return body.reader(), nil }
	hreq.Header = p.header.Clone()
	resp, err := p.doer.Do(hreq)
	if err != nil {
		body.release()
		return nil, err
	}
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
		err := errorResponse(resp)
		resp.Body.Close()
		body.release()
		return nil, err
	}
	return &chatStream{resp: resp, sse: newSSEStream(resp.Body), body: body}, nil
}

// requestHeader is what go-openai sends with a streamed call.
func requestHeader(apiKey string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	if apiKey != "" {
		h.Set("Authorization", "Bearer "+apiKey)
	}
	return h
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
