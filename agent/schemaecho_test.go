package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// TestInvalidArgumentsAreNotEchoedWhole: a tool call whose argument breaks
// the schema by its size (a 20,000-character path against maxLength 1024, a
// huge enum value or property name) used to come back whole in the error
// the model reads, past agent.observation_max_len, so one bad call doubled
// its bulk in the context of every later step. The error keeps the reason
// and stays within the bound.
func TestInvalidArgumentsAreNotEchoedWhole(t *testing.T) {
	long := strings.Repeat("a/", 10000) + "x"
	tool := &funcTool{name: "read", schema: `{"type":"object","properties":{"path":{"type":"string","maxLength":1024},
		"mode":{"type":"string","enum":["text","raw"]}},"additionalProperties":false}`,
		fn: func(context.Context, json.RawMessage) (string, error) { return "read", nil }}
	const maxLen = 600
	tests := []struct {
		name string
		args map[string]string
		want string
	}{
		{"long path", map[string]string{"path": long}, "more than 1024"},
		{"long enum value", map[string]string{"mode": long}, "/properties/mode"},
		{"long property name", map[string]string{long: "x"}, "invalid arguments for read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, _ := json.Marshal(tt.args)
			h := newHarness(t, toolsThenAnswer("sorry", []fakellm.ToolCall{call("read", string(args))}),
				func(o *Options) { o.ObservationMaxLen = maxLen }, tool)
			if _, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "x"}); err != nil {
				t.Fatal(err)
			}
			got := h.srv.LastRequest().ToolResults()[0].Content
			if !strings.Contains(got, tt.want) || !strings.Contains(got, `status="error"`) {
				t.Errorf("result lacks %q: %.300s", tt.want, got)
			}
			// The envelope (<tool-output …>) and a truncation note come on top.
			if n := utf8.RuneCountInString(got); n > maxLen+200 {
				t.Errorf("the error is %d characters, past observation_max_len %d: %.200s…", n, maxLen, got)
			}
		})
	}
}
