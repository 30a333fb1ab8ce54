package config

import (
	"strings"
	"testing"
)

// agent.max_message_chars and agent.max_turn_chars (issue 13, defect 7).
func TestInputCapKeys(t *testing.T) {
	c := mustParse(t, "agent:\n  max_message_chars: 2000\n  max_turn_chars: 6000\n", emptyEnv)
	if c.Agent.MaxMessageChars != 2000 || c.Agent.MaxTurnChars != 6000 {
		t.Fatalf("parsed %d, %d", c.Agent.MaxMessageChars, c.Agent.MaxTurnChars)
	}
	if d := Default(); d.Agent.MaxMessageChars != 16000 || d.Agent.MaxTurnChars != 48000 {
		t.Fatalf("defaults %d, %d", d.Agent.MaxMessageChars, d.Agent.MaxTurnChars)
	}
	for _, key := range []string{"max_message_chars", "max_turn_chars"} {
		msg := parseErr(t, "agent:\n  "+key+": 0\n", emptyEnv)
		if !strings.Contains(msg, "agent."+key) || !strings.Contains(msg, "config.yaml:2") {
			t.Errorf("%s: 0: error %q", key, msg)
		}
	}
}
