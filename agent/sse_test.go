package agent

import (
	"errors"
	"io"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// readAll reads a stream body the way Provider.once does and returns the
// chunks' text, tool-call arguments, finish reason and the error that ended
// it (nil after [DONE]).
func readAll(body string) (text, args, finish string, usage *openai.Usage, err error) {
	s := newSSEStream(strings.NewReader(body))
	defer s.Close()
	var c streamChunk
	for {
		if err = s.Recv(&c); err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return
		}
		if c.Usage != nil {
			usage = c.Usage
		}
		for _, ch := range c.Choices {
			text += ch.Delta.Content
			for _, tc := range ch.Delta.ToolCalls {
				args += tc.Function.Arguments
			}
			if ch.FinishReason != "" {
				finish = string(ch.FinishReason)
			}
		}
	}
}

func TestSSEStream(t *testing.T) {
	long := strings.Repeat("x", 20000) // a tool-call chunk far longer than the line buffer
	cases := []struct {
		name                     string
		body                     string
		text, args, finish       string
		wantErr                  func(error) bool
		wantUsage, wantTruncated bool
	}{
		{name: "answer", body: "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n\n" +
			"data:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":null}]}\r\n\r\n" +
			": keep-alive comment\n\nevent: ping\n\n" +
			"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}\n\ndata: [DONE]\n\n",
			text: "Hello", finish: "stop", wantUsage: true},
		{name: "long tool call", body: "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"" + long + "\"}}]}}]}\n\n" +
			"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n",
			args: long, finish: "tool_calls"},
		{name: "ends without [DONE]", body: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n", text: "a"},
		{name: "cut inside a chunk", body: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"ind", text: "a"},
		{name: "error event", body: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n",
			text: "a", wantErr: func(err error) bool {
				var apiErr *openai.APIError
				return errors.As(err, &apiErr) && apiErr.Message == "overloaded"
			}},
		{name: "error body instead of events", body: "{\"error\": {\n\"message\": \"model not loaded\",\n\"code\": 503}}\n",
			wantErr: func(err error) bool {
				var apiErr *openai.APIError
				return errors.As(err, &apiErr) && apiErr.Message == "model not loaded"
			}},
		{name: "too many empty lines", body: strings.Repeat("\n", emptyMessagesLimit+1) + "data: [DONE]\n",
			wantErr: func(err error) bool { return errors.Is(err, openai.ErrTooManyEmptyStreamMessages) }},
		{name: "not JSON", body: "data: {nope}\n\n", wantErr: func(err error) bool { return err != nil && !errors.Is(err, io.EOF) }},
		{name: "incomplete chunk before [DONE]", body: "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: {\"choices\":[\n\ndata: [DONE]\n",
			finish: "stop", wantErr: func(err error) bool { return err != nil && !errors.Is(err, io.EOF) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, args, finish, usage, err := readAll(c.body)
			if c.wantErr != nil {
				if !c.wantErr(err) {
					t.Fatalf("error = %v", err)
				}
			} else if err != nil {
				t.Fatalf("error = %v", err)
			}
			if text != c.text || args != c.args || finish != c.finish {
				t.Errorf("text %q, args %d bytes, finish %q; want %q, %d bytes, %q", text, len(args), finish, c.text, len(c.args), c.finish)
			}
			if c.wantUsage && (usage == nil || usage.TotalTokens != 5) {
				t.Errorf("usage = %+v", usage)
			}
		})
	}
}

func FuzzSSEStream(f *testing.F) {
	f.Add("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n")
	f.Add("data: {\"error\":{\"message\":\"x\"}}\n")
	f.Add("\n\n: c\ndata:\ndata: {}\n")
	f.Fuzz(func(t *testing.T, body string) {
		_, _, _, _, _ = readAll(body) // never panics, always ends
	})
}
