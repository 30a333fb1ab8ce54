package agent

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

func TestModelErrorsAndRetries(t *testing.T) {
	ok := fakellm.Response{Content: "answer"}
	tests := []struct {
		name       string
		script     []fakellm.Response
		wantErr    string // ModelError kind; "" = success
		wantReqs   int
		wantSleeps []time.Duration
		friendly   string
	}{
		{"429 with Retry-After then success", []fakellm.Response{{Status: 429, RetryAfter: "2"}, ok},
			"", 2, []time.Duration{2 * time.Second}, ""},
		{"5xx backoff doubles then success", []fakellm.Response{{Status: 500}, {Status: 502}, {Status: 503}, ok},
			"", 4, []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond}, ""},
		{"5xx gives up after max retries", []fakellm.Response{{Status: 503}, {Status: 503}, {Status: 503}, {Status: 503}},
			KindUnavailable, 4, []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond},
			"The model is not answering right now (HTTP 503); please try again in a minute."},
		{"backoff is capped", []fakellm.Response{{Status: 500}, {Status: 500}, {Status: 500}, {Status: 500}, {Status: 500}, ok},
			"", 6, nil, ""},
		{"401 not retried", []fakellm.Response{{Status: 401, ErrorCode: "invalid_api_key",
			ErrorMessage: "Incorrect API key provided: " + testKey + "."}}, KindAuth, 1, nil,
			"The model endpoint rejected the API key; the operator needs to check it."},
		{"403 not retried", []fakellm.Response{{Status: 403}}, KindForbidden, 1, nil, "refused access (HTTP 403)"},
		{"404 not retried", []fakellm.Response{{Status: 404, ErrorMessage: "The model `nope` does not exist"}}, KindNotFound, 1, nil, "llm.model"},
		{"400 not retried", []fakellm.Response{{Status: 400, ErrorMessage: "context_length_exceeded"}}, KindBadRequest, 1, nil, "HTTP 400"},
		{"Retry-After too long is not waited for", []fakellm.Response{{Status: 429, RetryAfter: "3600"}}, KindRateLimited, 1, nil, "rate-limited"},
		{"stream cut mid-way is retried", []fakellm.Response{{Content: "partial answer that breaks", ChunkSize: 3, CutAfter: 4}, ok},
			"", 2, []time.Duration{time.Millisecond}, ""},
		{"stream without finish is retried", []fakellm.Response{{Content: "abc", NoFinish: true, NoDone: true}, ok},
			"", 2, []time.Duration{time.Millisecond}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mut := func(o *Options) {}
			if tt.name == "backoff is capped" {
				mut = func(o *Options) { o.MaxRetries = 5; o.RetryMax = 3 * time.Millisecond }
				tt.wantSleeps = []time.Duration{1, 2, 3, 3, 3}
				for i := range tt.wantSleeps {
					tt.wantSleeps[i] *= time.Millisecond
				}
			}
			h := newHarness(t, fakellm.Queue(tt.script...), mut)
			rec := &recorder{}
			res, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "x", OnEvent: rec.on})
			if got := h.srv.RequestCount(); got != tt.wantReqs {
				t.Fatalf("requests %d, want %d", got, tt.wantReqs)
			}
			if got := h.sleeps.all(); len(got) != len(tt.wantSleeps) || (len(got) > 0 && !equalDur(got, tt.wantSleeps)) {
				t.Fatalf("sleeps %v, want %v", got, tt.wantSleeps)
			}
			if tt.wantErr == "" {
				if err != nil || res.Text != "answer" || rec.visible() != "answer" {
					t.Fatalf("err %v text %q visible %q", err, res.Text, rec.visible())
				}
				return
			}
			var me *ModelError
			if !errors.As(err, &me) || me.Kind != tt.wantErr {
				t.Fatalf("want ModelError %s, got %T %v", tt.wantErr, err, err)
			}
			if res.FinishReason != FinishAPIError || len(h.sessions.Turns("s")) != 0 {
				t.Fatalf("finish %q, committed %d", res.FinishReason, len(h.sessions.Turns("s")))
			}
			if f := FriendlyError(err); !strings.Contains(f, tt.friendly) {
				t.Fatalf("friendly %q lacks %q", f, tt.friendly)
			}
			if strings.Contains(err.Error(), testKey) || strings.Contains(FriendlyError(err), testKey) {
				t.Fatalf("API key leaked: %v", err)
			}
		})
	}
}

func equalDur(a, b []time.Duration) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCutStreamRetractsPartialText(t *testing.T) {
	h := newHarness(t, fakellm.Queue(fakellm.Response{Content: "The first try breaks off", ChunkSize: 3, CutAfter: 4},
		fakellm.Response{Content: "Second try works."}), nil)
	rec := &recorder{}
	res, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "x", OnEvent: rec.on})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rec.allText(), "The") || rec.count(EventReset) != 1 || rec.visible() != "Second try works." || res.Text != "Second try works." {
		t.Fatalf("all %q visible %q resets %d", rec.allText(), rec.visible(), rec.count(EventReset))
	}
	var retrying bool
	for _, e := range res.Trace {
		retrying = retrying || e.To == "planning/retrying"
	}
	if !retrying {
		t.Fatal("trace lacks the retrying state")
	}
}

func TestStreamIdleTimeoutRetried(t *testing.T) {
	h := newHarness(t, fakellm.Queue(fakellm.Response{Content: "stalls here", ChunkSize: 2, StallAfter: 2},
		fakellm.Response{Content: "fresh"}), func(o *Options) { o.StreamIdleTimeout = 40 * time.Millisecond })
	res, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "x"})
	if err != nil || res.Text != "fresh" || h.srv.RequestCount() != 2 {
		t.Fatalf("err %v text %q requests %d", err, res.Text, h.srv.RequestCount())
	}
}

func TestFirstChunkTimeoutReported(t *testing.T) {
	h := newHarness(t, func(*fakellm.Request) fakellm.Response { return fakellm.Response{Delay: time.Minute} },
		func(o *Options) { o.Timeout = 30 * time.Millisecond; o.MaxRetries = 1 })
	_, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "x"})
	var me *ModelError
	if !errors.As(err, &me) || me.Kind != KindTimeout || me.Attempts != 2 || !errors.Is(err, errFirstChunk) {
		t.Fatalf("got %v", err)
	}
	if FriendlyError(err) != "The model did not answer in time; please try again." {
		t.Fatal(FriendlyError(err))
	}
}

func TestModelNotConfiguredFailsFast(t *testing.T) {
	a, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "x"})
	if !errors.Is(err, ErrModelNotConfigured) || !strings.Contains(FriendlyError(err), "no model API key is configured") {
		t.Fatalf("got %v / %q", err, FriendlyError(err))
	}
	if _, err := a.ProcessDirect(context.Background(), "s", "x", DirectOptions{}); !errors.Is(err, ErrModelNotConfigured) {
		t.Fatalf("direct: %v", err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(20 * time.Second).Format(http.TimeFormat)}}, 20 * time.Second},
		{http.Header{"Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{http.Header{"X-Ratelimit-Reset-Requests": {"1s"}, "X-Ratelimit-Reset-Tokens": {"6m0s"}}, 6 * time.Minute},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{}, 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.h, now); got != tt.want {
			t.Errorf("%v: got %v want %v", tt.h, got, tt.want)
		}
	}
}

func TestMultimodalUserMessage(t *testing.T) {
	h := newHarness(t, fakellm.Echo(), nil)
	png := []byte{0x89, 'P', 'N', 'G'}
	res, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "what is this?",
		Media: []Media{{MIME: "image/png", Name: "a.png", Data: png}, {MIME: "application/pdf", Name: "doc.pdf", Data: []byte("%PDF")}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Text, "echo: what is this?") {
		t.Fatalf("echo %q", res.Text)
	}
	m := h.srv.LastRequest().LastMessage()
	if len(m.MultiContent) != 2 || m.MultiContent[1].ImageURL == nil || m.MultiContent[1].ImageURL.URL != "data:image/png;base64,iVBORw==" {
		t.Fatalf("parts %+v", m.MultiContent)
	}
	if !strings.Contains(m.MultiContent[0].Text, `[attachment "doc.pdf" (application/pdf, 4 bytes) cannot be read here]`) {
		t.Fatalf("text part %q", m.MultiContent[0].Text)
	}
	stored := h.sessions.Turns("s")[0].Messages[0]
	if len(stored.Media) != 2 || stored.Media[0].Size != 4 || stored.Content != "what is this?" {
		t.Fatalf("stored %+v", stored)
	}
}

func TestReasoningModelsUseMaxCompletionTokens(t *testing.T) {
	temp := float32(0.3)
	for _, tt := range []struct {
		model               string
		maxTok, maxComplTok int
		temp                float32
	}{{"fake-model", 99, 0, 0.3}, {"o3-mini", 0, 99, 0}} {
		h := newHarness(t, fakellm.Text("x"), func(o *Options) { o.Model = tt.model; o.MaxTokens = 99; o.Temperature = &temp })
		if _, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "x"}); err != nil {
			t.Fatal(err)
		}
		b := h.srv.LastRequest().Body
		//lint:ignore SA1019 OpenAI-compatible servers (Ollama, vLLM, llama.cpp) read only max_tokens: the test checks it is still sent.
		maxTok := b.MaxTokens
		if maxTok != tt.maxTok || b.MaxCompletionTokens != tt.maxComplTok || b.Temperature != tt.temp {
			t.Fatalf("%s: %d %d %v", tt.model, maxTok, b.MaxCompletionTokens, b.Temperature)
		}
	}
}
