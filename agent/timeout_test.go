package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// trickle is a stream that sends one character every 100ms for 20s: each
// chunk comes well within any idle timeout, yet the whole is far too long.
func trickle(content string) fakellm.Response {
	return fakellm.Response{Content: content, ChunkSize: 1, ChunkDelay: 100 * time.Millisecond}
}

var longText = strings.Repeat("abcdefghij", 20) // 200 chunks ≈ 20s

// llm.timeout bounds a whole model call, not only the wait for its first
// chunk and the gaps between chunks (issue 13, defect 9).
func TestTricklingStreamCutAtCallTimeout(t *testing.T) {
	h := newHarness(t, func(*fakellm.Request) fakellm.Response { return trickle(longText) }, func(o *Options) {
		o.Timeout = 400 * time.Millisecond
		o.StreamIdleTimeout = 5 * time.Second
		o.MaxRetries = 1
	})
	rec := &recorder{}
	_, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "x", OnEvent: rec.on})
	var me *ModelError
	if !errors.As(err, &me) || me.Kind != KindTimeout || me.Attempts != 2 || !errors.Is(err, errCallTimeout) {
		t.Fatalf("got %v, want a timeout ModelError after 2 attempts", err)
	}
	// Both attempts streamed a little and were cut long before their end.
	if got := rec.allText(); got == "" || len(got) >= len(longText) || !strings.HasPrefix(longText, got[:1]) {
		t.Fatalf("the stream was not cut: %d of %d characters arrived", len(got), len(longText))
	}
	if FriendlyError(err) != "The model did not answer in time; please try again." {
		t.Fatal(FriendlyError(err))
	}
}

// turn_timeout bounds the whole turn, closing answer included: a trickling
// closing answer used to get FinalGrace on top of the turn timeout.
func TestTurnTimeoutBoundsClosingAnswer(t *testing.T) {
	slow := &funcTool{name: "slow", fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}}
	closing := "Partial: " + longText
	h := newHarness(t, func(r *fakellm.Request) fakellm.Response {
		if !r.HasTools() {
			return trickle(closing) // the closing call, ≈ 21s
		}
		return fakellm.Response{ToolCalls: []fakellm.ToolCall{call("slow", `{}`)}}
	}, func(o *Options) {
		o.TurnTimeout = 800 * time.Millisecond
		o.FinalGrace = time.Minute // capped at a quarter of TurnTimeout
	}, slow)
	rec := &recorder{}
	res, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "x", OnEvent: rec.on})
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != FinishBudget {
		t.Fatalf("finish %s", res.FinishReason)
	}
	// The closing stream was cut at the turn's end: its text is a proper
	// prefix of what the fake would have sent (or the fixed note if nothing came).
	if res.Text == closing || (res.Text != closingFallback && !strings.HasPrefix(closing, res.Text)) {
		t.Fatalf("answer %q: the closing stream was not cut at the turn timeout", res.Text)
	}
	if rec.visible() != res.Text {
		t.Fatalf("visible %q, answer %q", rec.visible(), res.Text)
	}
	if h.srv.RequestCount() != 2 {
		t.Fatalf("%d model calls, want 2 (the tool step and the closing answer)", h.srv.RequestCount())
	}
	hist, _ := h.sessions.LoadHistory(context.Background(), "s", 0)
	if n := len(hist); n == 0 || hist[n-1].Content != res.Text {
		t.Fatalf("history does not end with the answer: %+v", hist)
	}
}

func TestClosingGraceIsAQuarterOfTheTurnAtMost(t *testing.T) {
	tests := []struct{ turn, grace, want time.Duration }{
		{30 * time.Second, 15 * time.Second, 7500 * time.Millisecond},
		{5 * time.Minute, 15 * time.Second, 15 * time.Second},
		{time.Second, 100 * time.Millisecond, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		tr := &turn{o: Options{TurnTimeout: tt.turn, FinalGrace: tt.grace}}
		if got := tr.grace(); got != tt.want {
			t.Errorf("turn %s grace %s: got %s, want %s", tt.turn, tt.grace, got, tt.want)
		}
	}
}
