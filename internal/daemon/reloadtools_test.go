package daemon

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// A reload that rebuilds the agent (any llm.* or agent.* change) keeps
// every tool the daemon registered at start: spawn (the task runner's),
// schedule and send_message alike. Before, spawn vanished from the model's
// tools after the first such reload.
func TestReloadKeepsEveryTool(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	cfg := strings.Replace(baseConfig, "  max_retries: 1\n", "  max_retries: 1\nagent:\n  tools: [current_time, schedule, spawn, read_file]\n", 1)
	l := startLive(t, llm, cfg, false)
	l.ask("c1", "ann", "hi", 1)
	before := llm.LastRequest().ToolNames()
	for _, want := range []string{"spawn", "schedule", "read_file", "current_time"} {
		if !slices.Contains(before, want) {
			t.Fatalf("tools at start %v lack %s", before, want)
		}
	}
	old, _ := os.ReadFile(l.path)
	writeFile(t, l.path, strings.Replace(string(old), "max_retries: 1", "max_retries: 2", 1))
	if _, err := l.d.Reload(context.Background(), "test"); err != nil {
		t.Fatalf("reload: %v", err)
	}
	l.ask("c1", "ann", "and now?", 2)
	if after := llm.LastRequest().ToolNames(); !slices.Equal(after, before) {
		t.Errorf("tools after a reload that rebuilt the agent: %v, want %v", after, before)
	}
}

// A media change (a transcription endpoint set while running) rebuilds the
// agent, which holds the transcriber: before, it applied only after a
// restart, and the voice notes meanwhile got "transcription is not set up".
func TestMediaChangeRebuildsTheAgent(t *testing.T) {
	old := config.Default()
	next := config.Default()
	next.Media.Transcription.BaseURL = "http://127.0.0.1:9/v1"
	if !agentChanged(old, next) {
		t.Error("media.transcription.base_url changed, but the agent is not rebuilt")
	}
	if agentChanged(old, config.Default()) {
		t.Error("an unchanged config rebuilds the agent")
	}
}
