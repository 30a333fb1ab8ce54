package agent

// Issue 30 part 1: what broke against third-party OpenAI-compatible servers
// (regression tests; the suite over every server flavor is compat_test.go).

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// llm.temperature: 0 is sent as 0 (deterministic answers), not left out for
// the server's default; an unset temperature still sends none.
func TestTemperatureZeroIsSent(t *testing.T) {
	zero, half := float32(0), float32(0.5)
	for _, tt := range []struct {
		name string
		temp *float32
		want float64
		sent bool
	}{
		{"explicit zero", &zero, 0, true},
		{"explicit value", &half, 0.5, true},
		{"unset", nil, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, fakellm.Text("ok"), func(o *Options) { o.Temperature = tt.temp })
			if _, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "hi"}); err != nil {
				t.Fatal(err)
			}
			got, sent := h.srv.LastRequest().Temperature()
			if sent != tt.sent || got != tt.want {
				t.Fatalf("temperature sent=%v %v, want sent=%v %v; body %s", sent, got, tt.sent, tt.want, h.srv.LastRequest().Raw)
			}
		})
	}
}

// newFlavorHarness is newHarness against a server already started (a
// flavor's fake).
func newFlavorHarness(t *testing.T, srv *fakellm.Server, mut func(*Options), tools ...Tool) *harness {
	t.Helper()
	h := newHarness(t, fakellm.Text("unused"), func(o *Options) {
		o.BaseURL, o.HTTPClient = srv.URL, srv.HTTPClient()
		if mut != nil {
			mut(o)
		}
	}, tools...)
	h.srv = srv
	return h
}

// An error the server sends inside a 200 stream (OpenRouter, LiteLLM) is
// the server's error: a permanent one (model_not_found) is reported at once
// with the server's message, not retried as a network error.
func TestInStreamErrorIsTheServersError(t *testing.T) {
	for _, f := range []fakellm.Flavor{fakellm.OpenRouter, fakellm.LiteLLM} {
		t.Run(string(f), func(t *testing.T) {
			srv := fakellm.StartFlavor(t, f, fakellm.Reply(fakellm.Response{Content: "never",
				StreamError: &fakellm.StreamErr{Status: 404, Code: "model_not_found", Message: "The model `nope` does not exist"}}))
			h := newFlavorHarness(t, srv, nil)
			rec := &recorder{}
			_, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "hi", OnEvent: rec.on})
			if n := srv.RequestCount(); n != 1 {
				t.Errorf("the model was asked %d times, want once (a permanent error is not retried)", n)
			}
			var me *ModelError
			if !errors.As(err, &me) || me.Kind != KindNotFound {
				t.Fatalf("want a not_found ModelError, got %v", err)
			}
			reply := FriendlyError(err)
			if strings.Contains(reply, "could not reach") || !strings.Contains(reply, "The model `nope` does not exist") ||
				!strings.Contains(reply, "llm.model") {
				t.Errorf("the user is told %q", reply)
			}
		})
	}
}

// tool_protocol auto falls back to the JSON protocol when the refusal of
// `tools` arrives inside the stream (LiteLLM's proxy does that).
func TestAutoFallsBackOnInStreamToolsRefusal(t *testing.T) {
	srv := fakellm.StartFlavor(t, fakellm.LiteLLM, func(r *fakellm.Request) fakellm.Response {
		if r.HasTools() {
			return fakellm.Response{StreamError: &fakellm.StreamErr{Status: 400,
				Message: "BadRequestError: tools is not supported by this model (function calling unavailable)"}}
		}
		if strings.HasPrefix(r.LastMessage().Content, "Result of now:") {
			return fakellm.Response{Content: `{"type":"final","answer":"It is 10:00."}`}
		}
		return fakellm.Response{Content: `{"type":"action","tool":"now","args":{}}`}
	})
	h := newFlavorHarness(t, srv, nil, constTool("now", "10:00"))
	res, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "time?"})
	if err != nil || res.Text != "It is 10:00." {
		t.Fatalf("err %v, answer %q", err, res.Text)
	}
	if reqs := srv.Requests(); len(reqs) != 3 || !reqs[0].HasTools() || reqs[1].HasTools() {
		t.Fatalf("%d requests, want the tools refusal then two json-protocol calls", len(reqs))
	}
}

// In the json protocol a model that keeps answering in plain text has
// answered: after the repair round the text is the answer, not "could not
// be understood".
func TestJSONModePlainTextIsTheAnswer(t *testing.T) {
	const prose = "Hello! I am doing well, thank you for asking."
	h := newHarness(t, fakellm.Queue(fakellm.Response{Content: prose}, fakellm.Response{Content: prose}),
		func(o *Options) { o.ToolProtocol = ProtocolJSON }, constTool("now", "10:00"))
	rec := &recorder{}
	res, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "how are you?", OnEvent: rec.on})
	if err != nil {
		t.Fatalf("the user is told %q (%v)", FriendlyError(err), err)
	}
	if res.Text != prose || rec.visible() != prose {
		t.Fatalf("answer %q, shown %q", res.Text, rec.visible())
	}
	turns := h.sessions.Turns("s")
	if len(turns) != 1 || turns[0].Messages[len(turns[0].Messages)-1].Content != prose {
		t.Fatalf("stored %+v", turns)
	}
}
