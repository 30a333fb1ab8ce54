package agent

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// TestProviderBoundCountsToolNamesAndIDs: llm.max_response_chars bounds the
// whole answer, so a model cannot get around it through the parts of a tool
// call that are not arguments: a tool name of megabytes, or hundreds of
// thousands of calls with empty arguments and long ids. Before, names and ids
// were not counted: the client read all of it, and the calls (with the name
// echoed in an "unknown tool" result) were kept in the session's history
// and sent again on every later turn.
func TestProviderBoundCountsToolNamesAndIDs(t *testing.T) {
	manyCalls := make([]fakellm.ToolCall, 0, 100000)
	for i := range cap(manyCalls) {
		manyCalls = append(manyCalls, fakellm.ToolCall{ID: fmt.Sprintf("call_%032d", i), Name: "lookup"})
	}
	// The fake sends a name in one delta: the client reads that line whole
	// (as it would one huge content delta), so only the flood of calls shows
	// that reading stops at the bound.
	tests := []struct {
		name      string
		resp      fakellm.Response
		stopsRead bool
	}{
		{"huge tool name", fakellm.Response{ToolCalls: []fakellm.ToolCall{{ID: "a", Name: strings.Repeat("../", bigAnswer/3), Arguments: "{}"}}}, false},
		{"many calls with empty arguments", fakellm.Response{ToolCalls: manyCalls}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakellm.Start(t, fakellm.Queue(tt.resp))
			ct := &countingTransport{base: srv.HTTPClient().Transport}
			p := NewProvider(Options{BaseURL: srv.URL, APIKey: testKey, Model: "fake-model",
				HTTPClient: &http.Client{Transport: ct}, MaxResponseChars: testMaxResponse})
			resp, err := p.Chat(context.Background(), ChatRequest{Model: "fake-model",
				Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "call everything"}}}, StreamObserver{})
			if err != nil {
				t.Fatal(err)
			}
			if !resp.Cut || resp.FinishReason != "length" || resp.ToolCalls != nil {
				t.Errorf("cut=%v finish=%q, %d tool calls kept: the answer is over the bound", resp.Cut, resp.FinishReason, len(resp.ToolCalls))
			}
			if resp.Content != cutMarker(testMaxResponse) {
				t.Errorf("content %q, want the cut marker", tail(resp.Content))
			}
			if read, early := ct.stats(); tt.stopsRead && (read > 256<<10 || !early) {
				t.Errorf("client read %d bytes, closed early %v: it should stop reading at the bound", read, early)
			}
		})
	}
}
