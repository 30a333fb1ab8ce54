package fakellm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The wire format of the answers: OpenAI error bodies, streamed chunks
// (SSE, tool-call deltas, usage) and whole completions.

// writeError answers r's error in the server flavor's shape.
func (s *Server) writeError(w http.ResponseWriter, r Response) {
	if s.flavor != OpenAI && s.flavor != "" {
		writeFlavorError(w, s.flavor, r)
		return
	}
	writeOpenAIError(w, r)
}

func writeOpenAIError(w http.ResponseWriter, r Response) {
	msg := r.ErrorMessage
	if msg == "" {
		msg = http.StatusText(r.Status)
	}
	typ := r.ErrorType
	if typ == "" {
		switch {
		case r.Status == http.StatusTooManyRequests:
			typ = "requests"
		case r.Status >= 500:
			typ = "server_error"
		default:
			typ = "invalid_request_error"
		}
	}
	nullable := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nullable(r.ErrorParam), "code": nullable(r.ErrorCode),
	}})
	if r.RetryAfter != "" {
		w.Header().Set("Retry-After", r.RetryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.Status)
	_, _ = w.Write(body)
}

// Wire shapes of a chat.completion.chunk (as OpenAI sends them; the first
// chunk of a tool call carries id/type/name, later ones only index+arguments).
type chunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint"`
	Choices           []chunkChoice `json:"choices"`
	Usage             *usageJSON    `json:"usage,omitempty"`
	withUsage         bool
}

// MarshalJSON writes "usage": null on ordinary chunks when include_usage is set.
func (c chunk) MarshalJSON() ([]byte, error) {
	type plain chunk
	b, err := json.Marshal(plain(c))
	if err != nil || !c.withUsage || c.Usage != nil {
		return b, err
	}
	return append(b[:len(b)-1], []byte(`,"usage":null}`)...), nil
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	Logprobs     any        `json:"logprobs"`
	FinishReason *string    `json:"finish_reason"`
}

type chunkDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	ToolCalls        []chunkToolCall `json:"tool_calls,omitempty"`
	Refusal          any             `json:"refusal,omitempty"`
}

type chunkToolCall struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function chunkFunction `json:"function"`
}

type chunkFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type usageJSON struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func (r Response) finish() string {
	if r.FinishReason != "" {
		return r.FinishReason
	}
	if len(r.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func (r Response) usage(req *Request) usageJSON {
	if r.Usage != nil {
		return usageJSON{r.Usage.PromptTokens, r.Usage.CompletionTokens, r.Usage.PromptTokens + r.Usage.CompletionTokens}
	}
	out := len(r.Content) + len(r.Reasoning) + len(strings.Join(r.ContentChunks, ""))
	for _, tc := range r.ToolCalls {
		out += len(tc.Name) + len(tc.Arguments)
	}
	p, c := max(1, len(req.Raw)/4), max(1, out/4)
	return usageJSON{p, c, p + c}
}

func (r Response) contentChunks() []string {
	if len(r.ContentChunks) > 0 {
		return r.ContentChunks
	}
	return splitRunes(r.Content, r.ChunkSize, 5)
}

func splitRunes(s string, n, def int) []string {
	if n <= 0 {
		n = def
	}
	var out []string
	for s != "" {
		i, count := 0, 0
		for i < len(s) && count < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			count++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func completionID(req *Request) string { return "chatcmpl-fake" + strconv.Itoa(req.Seq) }

func (s *Server) stream(w http.ResponseWriter, hr *http.Request, req *Request, resp Response, model string, withUsage bool) {
	var (
		chunks []chunk  // OpenAI's chunks, encoded as they are written (the load harness's model)
		events [][]byte // another flavor's events, or an answer with an in-stream error
	)
	done := !resp.NoDone
	switch {
	case (s.flavor == OpenAI || s.flavor == "") && resp.StreamError == nil:
		chunks = openAIChunks(req, resp, model, withUsage)
	case s.flavor == OpenAI || s.flavor == "":
		for _, c := range openAIChunks(req, resp, model, withUsage) {
			events = append(events, dataEvent(c))
		}
		events, done = insertStreamError(events, resp, OpenAI, req, model)
	default:
		events, done = flavorEvents(s.flavor, req, resp, model, withUsage)
	}
	n := len(events)
	if chunks != nil {
		n = len(chunks)
	}
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)

	pace := resp.ChunkDelay
	if resp.TokensPerSecond > 0 {
		pace = time.Duration(float64(time.Second) / resp.TokensPerSecond)
	}
	var buf bytes.Buffer
	for i := range n {
		if resp.CutAfter > 0 && i >= resp.CutAfter {
			panic(http.ErrAbortHandler) // closes the connection mid-body
		}
		if resp.StallAfter > 0 && i >= resp.StallAfter {
			select {
			case <-hr.Context().Done():
			case <-s.done:
			}
			return
		}
		if i > 0 && !s.wait(hr, pace) {
			return
		}
		var out []byte
		if chunks != nil {
			b, _ := json.Marshal(chunks[i])
			buf.Reset()
			buf.WriteString("data: ")
			buf.Write(b)
			buf.WriteString("\n\n")
			out = buf.Bytes()
		} else {
			out = events[i]
		}
		if _, err := w.Write(out); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	if done {
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}
	if flusher != nil {
		flusher.Flush()
	}
}

// dataEvent is one SSE event carrying v as JSON.
func dataEvent(v any) []byte {
	b, _ := json.Marshal(v)
	var buf bytes.Buffer
	buf.WriteString("data: ")
	buf.Write(b)
	buf.WriteString("\n\n")
	return buf.Bytes()
}

// openAIChunks are the chunks of a streamed answer as OpenAI sends them.
func openAIChunks(req *Request, resp Response, model string, withUsage bool) []chunk {
	base := chunk{ID: completionID(req), Object: "chat.completion.chunk", Created: req.Time.Unix(),
		Model: model, SystemFingerprint: "fp_fakellm", withUsage: withUsage}
	var chunks []chunk
	add := func(d chunkDelta, finish *string) {
		c := base
		c.Choices = []chunkChoice{{Index: 0, Delta: d, FinishReason: finish}}
		chunks = append(chunks, c)
	}
	empty := ""
	add(chunkDelta{Role: "assistant", Content: &empty}, nil)
	for _, part := range splitRunes(resp.Reasoning, resp.ChunkSize, 5) {
		add(chunkDelta{ReasoningContent: part}, nil)
	}
	for _, part := range resp.contentChunks() {
		add(chunkDelta{Content: &part}, nil)
	}
	for i, tc := range resp.ToolCalls {
		add(chunkDelta{ToolCalls: []chunkToolCall{{Index: i, ID: toolCallID(req, i, tc), Type: "function",
			Function: chunkFunction{Name: tc.Name}}}}, nil)
		for _, frag := range splitRunes(tc.Arguments, resp.ArgChunkSize, 7) {
			add(chunkDelta{ToolCalls: []chunkToolCall{{Index: i, Function: chunkFunction{Arguments: frag}}}}, nil)
		}
	}
	if fin := resp.finish(); !resp.NoFinish {
		add(chunkDelta{}, &fin)
	}
	if withUsage {
		c := base
		c.Choices = []chunkChoice{}
		u := resp.usage(req)
		c.Usage = &u
		chunks = append(chunks, c)
	}
	return chunks
}

func toolCallID(req *Request, i int, tc ToolCall) string {
	if tc.ID != "" {
		return tc.ID
	}
	return fmt.Sprintf("call_%d_%d", req.Seq, i)
}

func writeCompletion(w http.ResponseWriter, req *Request, resp Response, model string) {
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type tcall struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	msg := map[string]any{"role": "assistant", "content": resp.Content + strings.Join(resp.ContentChunks, ""), "refusal": nil}
	if resp.Reasoning != "" {
		msg["reasoning_content"] = resp.Reasoning
	}
	if len(resp.ToolCalls) > 0 {
		var calls []tcall
		for i, tc := range resp.ToolCalls {
			calls = append(calls, tcall{ID: toolCallID(req, i, tc), Type: "function", Function: fn{tc.Name, tc.Arguments}})
		}
		msg["tool_calls"] = calls
		if msg["content"] == "" {
			msg["content"] = nil
		}
	}
	u := resp.usage(req)
	body, _ := json.Marshal(map[string]any{
		"id": completionID(req), "object": "chat.completion", "created": req.Time.Unix(), "model": model,
		"system_fingerprint": "fp_fakellm",
		"choices":            []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": resp.finish()}},
		"usage":              u,
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}
