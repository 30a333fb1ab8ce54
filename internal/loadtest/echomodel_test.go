package loadtest

import (
	"context"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// TestEchoModelAnswersLikeFakeLLM: through the agent's real provider, the
// lean model streams the answer fakellm's Echo gives, with a finish reason
// and usage.
func TestEchoModelAnswersLikeFakeLLM(t *testing.T) {
	lean := NewEchoModel()
	defer lean.Close()
	ref := fakellm.New(fakellm.Echo())
	defer ref.Close()
	ask := func(url, text string) agent.ChatResponse {
		t.Helper()
		p := agent.NewProvider(agent.Options{BaseURL: url, APIKey: "k", Model: "fake-model"})
		resp, err := p.Chat(context.Background(), agent.ChatRequest{Model: "fake-model", Messages: []openai.ChatCompletionMessage{
			{Role: "system", Content: "be brief"},
			{Role: "user", Content: "earlier q1x0z"},
			{Role: "assistant", Content: `{"role":"user","content":"not this"}`},
			{Role: "user", Content: text},
		}}, agent.StreamObserver{})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, text := range []string{
		"q12x3z",
		"<runtime-context>\nchannel: load\n</runtime-context>\n\nhello q7x1z",
		"quotes \" and \\ backslashes, émoji 🙂, <b>tags</b> q1x1z",
	} {
		got, want := ask(lean.URL, text), ask(ref.URL, text)
		if got.Content != want.Content || got.FinishReason != "stop" || got.Usage.TotalTokens == 0 {
			t.Errorf("%q: got %q (%s, %+v), fakellm %q", text, got.Content, got.FinishReason, got.Usage, want.Content)
		}
	}
	if lean.RequestCount() != 3 {
		t.Errorf("%d requests counted", lean.RequestCount())
	}
}

func TestLastUserText(t *testing.T) {
	for _, c := range []struct {
		body, want string
		ok         bool
	}{
		{`{"messages":[{"role":"user","content":"a"},{"role":"user","content":"b \"q\" \\ \u00e9"}]}`, `b "q" \ é`, true},
		{`{"messages":[{"role":"system","content":"x"}]}`, "", false},
		{`{"messages":[{"role":"user","content":"cut`, "", false},
	} {
		got, ok := lastUserText([]byte(c.body))
		if got != c.want || ok != c.ok {
			t.Errorf("lastUserText(%s) = %q, %v", c.body, got, ok)
		}
	}
}
