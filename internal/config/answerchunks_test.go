package config

import (
	"strings"
	"testing"
)

// TestMaxAnswerChunks: agent.max_answer_chunks defaults to 8, is read from
// the file and must be at least 1.
func TestMaxAnswerChunks(t *testing.T) {
	if got := mustParse(t, "bot:\n  name: x\n", envOf(nil)).Agent.MaxAnswerChunks; got != 8 {
		t.Errorf("default agent.max_answer_chunks = %d, want 8", got)
	}
	if got := mustParse(t, "agent:\n  max_answer_chunks: 3\n", envOf(nil)).Agent.MaxAnswerChunks; got != 3 {
		t.Errorf("agent.max_answer_chunks = %d, want 3", got)
	}
	for _, bad := range []string{"0", "-1"} {
		msg := parseErr(t, "agent:\n  max_answer_chunks: "+bad+"\n", envOf(nil))
		if want := "config.yaml:2: agent.max_answer_chunks: must be a positive integer"; !strings.Contains(msg, want) {
			t.Errorf("max_answer_chunks %s: error %q, want it to contain %q", bad, msg, want)
		}
	}
}
