package config

import (
	"strings"
	"testing"
	"time"
)

// tasks: parses with its defaults, and bad limits are refused naming the key.
func TestTasksSection(t *testing.T) {
	c := mustParse(t, "tasks: {max_per_chat: 1, max_running: 2, max_duration: 5m}\n", emptyEnv)
	if c.Tasks != (Tasks{MaxPerChat: 1, MaxRunning: 2, MaxDuration: 5 * time.Minute}) {
		t.Fatalf("tasks %+v", c.Tasks)
	}
	if d := Default().Tasks; d != (Tasks{MaxPerChat: 3, MaxRunning: 8, MaxDuration: 30 * time.Minute}) {
		t.Fatalf("defaults %+v", d)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"tasks: {max_per_chat: 0}\n", "tasks.max_per_chat: must be a positive integer, got 0"},
		{"tasks: {max_running: -1}\n", "tasks.max_running: must be a positive integer, got -1"},
		{"tasks: {max_duration: 10ms}\n", "tasks.max_duration: 10ms is too short: at least 1s (default 30m)"},
		{"tasks: {max_tasks: 3}\n", "max_tasks"},
	} {
		if got := parseErr(t, tc.yaml, emptyEnv); !strings.Contains(got, tc.want) {
			t.Errorf("%q: error %q, want it to contain %q", tc.yaml, got, tc.want)
		}
	}
}
