package agent

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/switchboard-bot/switchboard/internal/jsonlite"
)

// goOpenAIBody is the body go-openai would have sent for creq.
func goOpenAIBody(t testing.TB, creq openai.ChatCompletionRequest) []byte {
	t.Helper()
	creq.Stream = true
	b, err := json.Marshal(creq)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameJSON(t testing.TB, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("our body is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("request bodies differ\n got: %s\nwant: %s", got, want)
	}
}

// TestRequestBodyMatchesGoOpenAI: what the model endpoint receives is the
// request go-openai sent before, field for field, for every kind of message
// and tool the agent sends.
func TestRequestBodyMatchesGoOpenAI(t *testing.T) {
	temp := float32(0.7)
	idx := 2
	system := strings.Repeat("You are a careful assistant. <rules> & \"quotes\"\n", 20)
	schema := json.RawMessage("{ \"type\": \"object\",\n \"properties\": {\"tz\": {\"type\": \"string\"}} }")
	cases := []struct {
		name string
		req  ChatRequest
	}{
		{"plain", ChatRequest{Model: "gpt-4o-mini", MaxTokens: 4096, Temperature: &temp, Messages: []openai.ChatCompletionMessage{
			{Role: "system", Content: system}, {Role: "system", Content: "notes"}, {Role: "user", Content: "hi"}}}},
		{"tools and calls", ChatRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
			{Role: "user", Content: "time?"},
			{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "c1", Type: "function", Function: openai.FunctionCall{Name: "now", Arguments: `{"tz":"Europe/Oslo"}`}},
				{Index: &idx, Type: "function", Function: openai.FunctionCall{Name: "x"}}}},
			{Role: "tool", Content: "10:00", ToolCallID: "c1", Name: "now"},
			{Role: "assistant", Content: "It is 10:00.", ReasoningContent: "looked it up"}},
			Tools: []openai.Tool{{Type: "function", Function: &openai.FunctionDefinition{Name: "now", Description: "Current time", Parameters: schema}},
				{Type: "function", Function: &openai.FunctionDefinition{Name: "strict", Strict: true, Parameters: json.RawMessage(`{}`)}}}}},
		{"images", ChatRequest{Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", MultiContent: []openai.ChatMessagePart{
			{Type: openai.ChatMessagePartTypeText, Text: "what is this"},
			{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: "data:image/png;base64,AAAA", Detail: openai.ImageURLDetailAuto}}}}}}},
		{"reasoning model", ChatRequest{Model: "o3-mini", MaxTokens: 100, Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"}}}},
		{"odd text", ChatRequest{Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user",
			Content: "bad \xff utf8, \u2028\u2029 separators, \x00\x01\x1f controls, \b\f\t\r\n, emoji 🙂, DEL \x7f"}}}},
		{"no temperature, tiny temperature", ChatRequest{Model: "m", Temperature: new(float32(1e-7)), Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"}}}},
		{"non-function tool", ChatRequest{Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"}},
			Tools: []openai.Tool{{Type: "web_search", Parameters: map[string]any{"search_context_size": "low"}}}}},
	}
	var enc encodeCache
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			creq := completionRequest(c.req)
			for range 2 { // the second time from the caches
				got, err := enc.appendRequest(nil, &creq, requestTemperature(c.req))
				if err != nil {
					t.Fatal(err)
				}
				sameJSON(t, got, goOpenAIBody(t, creq))
			}
		})
	}
}

// TestRequestCacheSeesChanges: a tool whose description or schema changed
// (an MCP server reloaded) is sent as it is now, never from a stale cache.
func TestRequestCacheSeesChanges(t *testing.T) {
	var enc encodeCache
	tool := func(desc, schema string) ChatRequest {
		return ChatRequest{Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"}},
			Tools: []openai.Tool{{Type: "function", Function: &openai.FunctionDefinition{Name: "kg__search", Description: desc, Parameters: json.RawMessage(schema)}}}}
	}
	for _, req := range []ChatRequest{
		tool("Search v1", `{"type":"object"}`),
		tool("Search v2", `{"type":"object"}`),
		tool("Search v2", `{"type":"object","properties":{"q":{"type":"string"}}}`),
	} {
		creq := completionRequest(req)
		got, err := enc.appendRequest(nil, &creq, requestTemperature(req))
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, got, goOpenAIBody(t, creq))
	}
}

// TestRequestErrorsAsGoOpenAI: requests go-openai refused are refused the
// same way, so classify still calls them bad requests.
func TestRequestErrorsAsGoOpenAI(t *testing.T) {
	var enc encodeCache
	for name, req := range map[string]ChatRequest{
		"content and parts": {Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x", MultiContent: []openai.ChatMessagePart{{Type: "text", Text: "y"}}}}},
		"bad schema":        {Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"}}, Tools: []openai.Tool{{Type: "function", Function: &openai.FunctionDefinition{Name: "t", Parameters: json.RawMessage(`{`)}}}},
	} {
		creq := completionRequest(req)
		if _, err := enc.appendRequest(nil, &creq, requestTemperature(req)); err == nil {
			t.Errorf("%s: no error", name)
		} else if name == "content and parts" && !errors.Is(err, openai.ErrContentFieldsMisused) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "<a href=\"x\">&amp;</a>", "\xff\xfe", "\u2028\u2029", "tab\tnl\n\x00\x1f\x7f", "日本語🙂"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := jsonlite.AppendString(nil, s); string(got) != string(want) {
			t.Errorf("jsonlite.AppendString(%q) = %s, encoding/json: %s", s, got, want)
		}
	})
}

// BenchmarkRequestBody is the encoding of a typical request: a 4 KB system
// prompt, 40 history messages, five tools.
func BenchmarkRequestBody(b *testing.B) {
	msgs := []openai.ChatCompletionMessage{{Role: "system", Content: strings.Repeat("You are a helpful assistant. ", 140)}}
	for i := range 40 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, openai.ChatCompletionMessage{Role: role, Content: strings.Repeat("some words of the conversation ", 6)})
	}
	var tools []openai.Tool
	for _, n := range []string{"current_time", "web_fetch", "memory", "schedule", "send_message"} {
		tools = append(tools, openai.Tool{Type: "function", Function: &openai.FunctionDefinition{Name: n, Description: "does " + n,
			Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","description":"an argument"}},"required":["a"]}`)}})
	}
	creq := completionRequest(ChatRequest{Model: "gpt-4o-mini", MaxTokens: 4096, Messages: msgs, Tools: tools})
	b.Run("go-openai", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(creq); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wire", func(b *testing.B) {
		var enc encodeCache
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if buf, err = enc.appendRequest(buf[:0], &creq, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestRefusedBeforeSending: completion-only models, which go-openai refused
// without calling the endpoint, are refused the same way: a non-retryable
// bad request.
func TestRefusedBeforeSending(t *testing.T) {
	p := NewProvider(Options{BaseURL: "http://127.0.0.1:1/v1", APIKey: "k"})
	for _, model := range []string{"text-davinci-003", "davinci"} {
		_, err := p.openStream(t.Context(), ChatRequest{Model: model, Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"}}})
		if kind, _, retry := classify(err); !errors.Is(err, openai.ErrChatCompletionInvalidModel) || kind != KindBadRequest || retry {
			t.Errorf("%s: %v classified %s (retry %v)", model, err, kind, retry)
		}
	}
}
