package agent

// The model-server compatibility suite (issue 30): Switchboard's real
// Provider and agent loop against fakes of Ollama, llama.cpp, vLLM,
// LiteLLM, OpenRouter, Azure OpenAI, Groq and DeepSeek (fakellm's flavors:
// their streaming, tool calls, usage and error shapes, sources named in
// internal/testkit/fakellm/flavor.go). Every flavor passes every case.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

func TestModelServerCompat(t *testing.T) {
	usage := &fakellm.Usage{PromptTokens: 21, CompletionTokens: 8}
	ok := fakellm.Response{Content: "answer", ChunkSize: 2, Usage: usage}
	// notFound is each server's "no such model" before the stream.
	notFound := func(f fakellm.Flavor) fakellm.Response {
		r := fakellm.Response{Status: http.StatusNotFound, ErrorCode: "model_not_found", ErrorMessage: "The model `nope` does not exist"}
		if f == fakellm.Azure {
			r.ErrorCode, r.ErrorMessage = "DeploymentNotFound", "The API deployment for this resource does not exist."
		}
		return r
	}
	cases := []struct {
		name   string
		script func(f fakellm.Flavor) []fakellm.Response
		tools  bool
		check  func(t *testing.T, f fakellm.Flavor, c *compatRun)
	}{
		{"plain turn", func(fakellm.Flavor) []fakellm.Response {
			return []fakellm.Response{{Content: "Hello there.", ChunkSize: 3, Reasoning: "The user greets me.", Usage: usage}}
		}, false, func(t *testing.T, f fakellm.Flavor, c *compatRun) {
			c.wantAnswer(t, "Hello there.", 1)
			if c.res.Usage.PromptTokens != 21 || c.res.Usage.CompletionTokens != 8 {
				t.Errorf("usage %+v, want the server's 21+8", c.res.Usage)
			}
			msgs := c.h.sessions.Turns("s")[0].Messages
			if got := msgs[len(msgs)-1].Reasoning; got != "The user greets me." {
				t.Errorf("reasoning %q not kept", got)
			}
		}},
		{"streamed tool call to the final answer", func(fakellm.Flavor) []fakellm.Response {
			return []fakellm.Response{
				{ToolCalls: []fakellm.ToolCall{{Name: "weather", Arguments: `{"city":"Oslo","unit":"celsius"}`}}, ArgChunkSize: 4, Usage: usage},
				{Content: "It is 18°C in Oslo.", Usage: usage}}
		}, true, func(t *testing.T, f fakellm.Flavor, c *compatRun) {
			c.wantAnswer(t, "It is 18°C in Oslo.", 2)
			if calls := c.weather.Calls(); len(calls) != 1 || calls[0] != `{"city":"Oslo","unit":"celsius"}` {
				t.Errorf("tool calls %q", calls)
			}
			if r := c.srv.Requests()[1].ToolResults(); len(r) != 1 || !strings.Contains(r[0].Content, "18°C") {
				t.Errorf("tool result not sent back: %+v", r)
			}
		}},
		{"permanent error before the stream", func(f fakellm.Flavor) []fakellm.Response {
			return []fakellm.Response{notFound(f)}
		}, false, func(t *testing.T, f fakellm.Flavor, c *compatRun) {
			c.wantModelError(t, KindNotFound, false, 1, "llm.model")
		}},
		{"content filter refusal before the stream", func(fakellm.Flavor) []fakellm.Response {
			return []fakellm.Response{{Status: http.StatusBadRequest, ErrorCode: "content_filter",
				ErrorMessage: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy."}}
		}, false, func(t *testing.T, f fakellm.Flavor, c *compatRun) {
			c.wantModelError(t, KindBadRequest, false, 1, "content management policy")
		}},
		{"rate limit before the stream is waited out", func(fakellm.Flavor) []fakellm.Response {
			return []fakellm.Response{{Status: http.StatusTooManyRequests, ErrorMessage: "Rate limit reached", RetryAfter: "2"}, ok}
		}, false, func(t *testing.T, f fakellm.Flavor, c *compatRun) {
			c.wantAnswer(t, "answer", 2)
			if s := c.h.sleeps.all(); len(s) != 1 || s[0].Seconds() != 2 {
				t.Errorf("waits %v, want the Retry-After of 2s", s)
			}
		}},
		{"permanent error inside the stream", func(fakellm.Flavor) []fakellm.Response {
			r := fakellm.Response{Content: "never", StreamError: &fakellm.StreamErr{Status: http.StatusNotFound,
				Code: "model_not_found", Type: "invalid_request_error", Message: "The model `nope` does not exist"}}
			return []fakellm.Response{r, r, r, r} // Ollama's is retried (see below)
		}, false, func(t *testing.T, f fakellm.Flavor, c *compatRun) {
			want := KindNotFound
			if f == fakellm.Ollama { // Ollama says only "api_error" once the stream began
				want = KindUnavailable
			}
			c.wantModelError(t, want, want == KindUnavailable, map[bool]int{true: 4, false: 1}[want == KindUnavailable], "The model `nope` does not exist")
		}},
		{"transient error inside the stream is retried", func(fakellm.Flavor) []fakellm.Response {
			return []fakellm.Response{{Content: "partial text that fails", ChunkSize: 4, StreamErrorAfter: 2,
				StreamError: &fakellm.StreamErr{Status: http.StatusBadGateway, Code: "server_error", Type: "server_error",
					Message: "Provider disconnected unexpectedly"}}, ok}
		}, false, func(t *testing.T, f fakellm.Flavor, c *compatRun) {
			c.wantAnswer(t, "answer", 2)
		}},
		{"cut stream is retried, partial text discarded", func(fakellm.Flavor) []fakellm.Response {
			return []fakellm.Response{{Content: "partial text that breaks", ChunkSize: 3, CutAfter: 4}, ok}
		}, false, func(t *testing.T, f fakellm.Flavor, c *compatRun) {
			c.wantAnswer(t, "answer", 2)
			if c.rec.count(EventReset) == 0 {
				t.Errorf("the partial text was never withdrawn")
			}
		}},
	}
	for _, f := range fakellm.Flavors() {
		t.Run(string(f), func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					c := runCompat(t, f, tc.script(f), tc.tools)
					tc.check(t, f, c)
				})
			}
		})
	}
}

// compatRun is one turn against a flavor's fake.
type compatRun struct {
	srv     *fakellm.Server
	h       *harness
	rec     *recorder
	weather *funcTool
	res     Result
	err     error
}

func runCompat(t *testing.T, f fakellm.Flavor, script []fakellm.Response, tools bool) *compatRun {
	t.Helper()
	c := &compatRun{rec: &recorder{}, weather: constTool("weather", "18°C")}
	c.srv = fakellm.StartFlavor(t, f, fakellm.Queue(script...))
	c.srv.RequireKey(testKey) // Authorization: Bearer, or Azure's api-key
	var ts []Tool
	if tools {
		ts = append(ts, c.weather)
	}
	c.h = newFlavorHarness(t, c.srv, func(o *Options) { o.ToolProtocol = ProtocolNative }, ts...)
	c.res, c.err = c.h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "hello", OnEvent: c.rec.on})
	return c
}

func (c *compatRun) wantAnswer(t *testing.T, answer string, requests int) {
	t.Helper()
	if c.err != nil {
		t.Fatalf("turn failed: %v (the user is told %q)", c.err, FriendlyError(c.err))
	}
	if c.res.Text != answer || c.rec.visible() != answer {
		t.Errorf("answer %q, shown %q; want %q", c.res.Text, c.rec.visible(), answer)
	}
	if n := c.srv.RequestCount(); n != requests {
		t.Errorf("%d requests, want %d", n, requests)
	}
}

func (c *compatRun) wantModelError(t *testing.T, kind string, transient bool, requests int, told string) {
	t.Helper()
	var me *ModelError
	if !errors.As(c.err, &me) || me.Kind != kind || me.Transient() != transient {
		t.Fatalf("want a %s ModelError (transient %v), got %#v", kind, transient, c.err)
	}
	if n := c.srv.RequestCount(); n != requests {
		t.Errorf("%d requests, want %d", n, requests)
	}
	if reply := FriendlyError(c.err); !strings.Contains(reply, told) {
		t.Errorf("the user is told %q, want it to mention %q", reply, told)
	}
	if strings.Contains(c.err.Error(), testKey) || strings.Contains(FriendlyError(c.err), testKey) {
		t.Errorf("the API key leaked: %v", c.err)
	}
}
