package fakellm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

func client(s *Server) *openai.Client {
	cfg := openai.DefaultConfig("sk-test")
	cfg.BaseURL = s.URL
	cfg.HTTPClient = s.HTTPClient()
	return openai.NewClientWithConfig(cfg)
}

func userReq(text string, stream bool) openai.ChatCompletionRequest {
	r := openai.ChatCompletionRequest{Model: "fake-model", Messages: []openai.ChatCompletionMessage{
		{Role: "user", Content: text}}}
	if stream {
		r.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	return r
}

type collected struct {
	deltas    []string
	reasoning string
	calls     map[int]*openai.ToolCall
	finish    openai.FinishReason
	usage     *openai.Usage
	chunks    int
}

func collect(t *testing.T, st *openai.ChatCompletionStream) (collected, error) {
	t.Helper()
	defer st.Close()
	c := collected{calls: map[int]*openai.ToolCall{}}
	for {
		resp, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return c, nil
		}
		if err != nil {
			return c, err
		}
		c.chunks++
		if resp.Usage != nil {
			c.usage = resp.Usage
		}
		for _, ch := range resp.Choices {
			if ch.Delta.Content != "" {
				c.deltas = append(c.deltas, ch.Delta.Content)
			}
			c.reasoning += ch.Delta.ReasoningContent
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == nil {
					t.Fatalf("tool-call delta without index: %+v", tc)
				}
				cur, ok := c.calls[*tc.Index]
				if !ok {
					cp := tc
					cur = &cp
					c.calls[*tc.Index] = cur
					continue
				}
				cur.Function.Arguments += tc.Function.Arguments
			}
			if ch.FinishReason != "" {
				c.finish = ch.FinishReason
			}
		}
	}
}

func TestStreamedAnswerThroughGoOpenAI(t *testing.T) {
	s := Start(t, Queue(Response{Content: "Hello there, world", ChunkSize: 4, Reasoning: "think",
		Usage: &Usage{PromptTokens: 11, CompletionTokens: 5}}))
	st, err := client(s).CreateChatCompletionStream(context.Background(), userReq("hi", true))
	if err != nil {
		t.Fatal(err)
	}
	c, err := collect(t, st)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.deltas, ""); got != "Hello there, world" {
		t.Fatalf("content %q", got)
	}
	if len(c.deltas) != 5 {
		t.Fatalf("want 5 deltas of 4 runes, got %q", c.deltas)
	}
	if c.reasoning != "think" || c.finish != openai.FinishReasonStop {
		t.Fatalf("reasoning %q finish %q", c.reasoning, c.finish)
	}
	if c.usage == nil || c.usage.PromptTokens != 11 || c.usage.TotalTokens != 16 {
		t.Fatalf("usage %+v", c.usage)
	}
	req := s.LastRequest()
	if req.LastUserText() != "hi" || !req.Body.Stream || req.Header.Get("Authorization") != "Bearer sk-test" {
		t.Fatalf("request log: %+v", req)
	}
}

func TestToolCallChunksMatchOpenAIShape(t *testing.T) {
	args := `{"city":"Berlin","days":3}`
	s := Start(t, Queue(Response{ToolCalls: []ToolCall{{ID: "call_a", Name: "weather", Arguments: args},
		{Name: "time", Arguments: `{}`}}, ArgChunkSize: 3}))
	// Raw wire check: id/type/name only in a call's first chunk, every fragment has an index.
	body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`
	resp, err := http.Post(s.URL+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	var lines []string
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			lines = append(lines, l)
		}
	}
	if lines[len(lines)-1] != "data: [DONE]" {
		t.Fatalf("last line %q", lines[len(lines)-1])
	}
	seen := map[float64]bool{}
	var sawUsageChunk bool
	for _, l := range lines[:len(lines)-1] {
		var m map[string]any
		if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "data: ")), &m); err != nil {
			t.Fatalf("bad chunk %q: %v", l, err)
		}
		if m["object"] != "chat.completion.chunk" {
			t.Fatalf("object %v", m["object"])
		}
		u, hasUsage := m["usage"]
		if !hasUsage {
			t.Fatalf("chunk without usage key while include_usage set: %s", l)
		}
		choices := m["choices"].([]any)
		if len(choices) == 0 {
			if u == nil {
				t.Fatalf("empty choices without usage: %s", l)
			}
			sawUsageChunk = true
			continue
		}
		delta := choices[0].(map[string]any)["delta"].(map[string]any)
		tcs, _ := delta["tool_calls"].([]any)
		for _, x := range tcs {
			tc := x.(map[string]any)
			idx, ok := tc["index"].(float64)
			if !ok {
				t.Fatalf("tool call fragment without index: %s", l)
			}
			_, hasID := tc["id"]
			_, hasType := tc["type"]
			_, hasName := tc["function"].(map[string]any)["name"]
			first := !seen[idx]
			seen[idx] = true
			if hasID != first || hasType != first || hasName != first {
				t.Fatalf("id/type/name must appear exactly in the first chunk of call %v: %s", idx, l)
			}
		}
	}
	if !sawUsageChunk {
		t.Fatal("no usage chunk")
	}

	// And the real client reassembles it.
	_, err = client(s).CreateChatCompletionStream(context.Background(), userReq("x", true))
	if err == nil {
		t.Fatal("queue should be exhausted after one response")
	}
	s.SetResponder(Queue(Response{ToolCalls: []ToolCall{{ID: "call_a", Name: "weather", Arguments: args}}, ArgChunkSize: 2}))
	st, err := client(s).CreateChatCompletionStream(context.Background(), userReq("x", true))
	if err != nil {
		t.Fatal(err)
	}
	c, err := collect(t, st)
	if err != nil {
		t.Fatal(err)
	}
	if c.finish != openai.FinishReasonToolCalls || c.calls[0].ID != "call_a" || c.calls[0].Function.Name != "weather" ||
		c.calls[0].Function.Arguments != args {
		t.Fatalf("got %+v finish %q", c.calls[0], c.finish)
	}
}

func TestErrorResponsesDecodeAsAPIError(t *testing.T) {
	tests := []struct {
		name   string
		resp   Response
		status int
		code   any
	}{
		{"rate limit", Response{Status: 429, RetryAfter: "2", ErrorCode: "rate_limit_exceeded"}, 429, "rate_limit_exceeded"},
		{"bad key", Response{Status: 401, ErrorCode: "invalid_api_key", ErrorMessage: "Incorrect API key provided"}, 401, "invalid_api_key"},
		{"server", Response{Status: 500}, 500, 0}, // go-openai decodes "code": null as 0
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Start(t, Queue(tt.resp))
			_, err := client(s).CreateChatCompletionStream(context.Background(), userReq("x", true))
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("want *openai.APIError, got %T %v", err, err)
			}
			if apiErr.HTTPStatusCode != tt.status || apiErr.Code != tt.code {
				t.Fatalf("got status %d code %v", apiErr.HTTPStatusCode, apiErr.Code)
			}
		})
	}
	// Retry-After header is sent.
	s := Start(t, Queue(Response{Status: 429, RetryAfter: "7"}))
	resp, err := http.Post(s.URL+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Retry-After") != "7" || resp.StatusCode != 429 {
		t.Fatalf("status %d retry-after %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestCutStreamIsAnErrorNotEOF(t *testing.T) {
	s := Start(t, Queue(Response{Content: "abcdefghijklmnop", ChunkSize: 2, CutAfter: 3}))
	st, err := client(s).CreateChatCompletionStream(context.Background(), userReq("x", true))
	if err != nil {
		t.Fatal(err)
	}
	c, err := collect(t, st)
	if err == nil {
		t.Fatalf("want an error for a cut stream, got clean end with %q", c.deltas)
	}
	if strings.Join(c.deltas, "") != "abcd" {
		t.Fatalf("deltas before the cut: %q", c.deltas)
	}
}

func TestStallEndsWhenClientLeaves(t *testing.T) {
	s := Start(t, Queue(Response{Content: "abcdef", ChunkSize: 1, StallAfter: 2}))
	ctx, cancel := context.WithCancel(context.Background())
	st, err := client(s).CreateChatCompletionStream(ctx, userReq("x", true))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Recv(); err != nil { // role chunk
		t.Fatal(err)
	}
	if r, err := st.Recv(); err != nil || r.Choices[0].Delta.Content != "a" {
		t.Fatalf("%v %v", r, err)
	}
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if _, err := st.Recv(); err == nil {
		t.Fatal("want error after cancel")
	}
}

func TestNonStreamingAndRejectTools(t *testing.T) {
	s := Start(t, RejectTools(Echo()))
	resp, err := client(s).CreateChatCompletion(context.Background(), userReq("<runtime-context>\ntime: x\n</runtime-context>\n\nhello", false))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "echo: hello" {
		t.Fatalf("got %q", got)
	}
	if resp.Usage.TotalTokens == 0 {
		t.Fatal("usage missing")
	}
	req := userReq("hi", false)
	req.Tools = []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "t", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	_, err = client(s).CreateChatCompletion(context.Background(), req)
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 400 || !strings.Contains(apiErr.Message, "tools") {
		t.Fatalf("got %v", err)
	}
	if got := s.LastRequest().ToolNames(); len(got) != 1 || got[0] != "t" {
		t.Fatalf("logged tools %v", got)
	}
}

func TestRequestLogConcurrent(t *testing.T) {
	s := Start(t, Echo())
	c := client(s)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := c.CreateChatCompletionStream(context.Background(), userReq("x", true))
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := collect(t, st); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := s.RequestCount(); n != 8 || len(s.Requests()) != 8 {
		t.Fatalf("logged %d", n)
	}
}

func TestMatchRules(t *testing.T) {
	s := Start(t, Match(
		Rule{When: AfterToolResult, Respond: Reply(Response{Content: "after tool"})},
		Rule{When: LastUserIs("weather?"), Respond: Reply(Response{ToolCalls: []ToolCall{{Name: "weather", Arguments: `{}`}}})},
	))
	c := client(s)
	resp, err := c.CreateChatCompletion(context.Background(), userReq("weather?", false))
	if err != nil || len(resp.Choices[0].Message.ToolCalls) != 1 || resp.Choices[0].FinishReason != openai.FinishReasonToolCalls {
		t.Fatalf("%v %+v", err, resp)
	}
	req := userReq("weather?", false)
	req.Messages = append(req.Messages, resp.Choices[0].Message,
		openai.ChatCompletionMessage{Role: "tool", Content: "sunny", ToolCallID: resp.Choices[0].Message.ToolCalls[0].ID})
	resp, err = c.CreateChatCompletion(context.Background(), req)
	if err != nil || resp.Choices[0].Message.Content != "after tool" {
		t.Fatalf("%v %+v", err, resp)
	}
	if got := s.LastRequest().ToolResults(); len(got) != 1 || got[0].Content != "sunny" {
		t.Fatalf("logged %+v", got)
	}
	_, err = c.CreateChatCompletion(context.Background(), userReq("something else", false))
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 500 || !strings.Contains(apiErr.Message, `"something else"`) {
		t.Fatalf("unmatched: %v", err)
	}
}
