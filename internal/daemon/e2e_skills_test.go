package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakesearch"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

const skillsConfig = `
agent:
  tools: [current_time, skill, web_search]
  web_search:
    provider: brave
    url: %SEARCH%
    max_results: 2
skills:
  dir: ./skills
`

// Issue 16 end to end: config (skills.dir, agent.web_search with the key
// from BRAVE_API_KEY), a persona file with a skills allowlist, and a chat
// turn in which the model searches and loads a skill. The prompt lists only
// the persona's skills, the malformed SKILL.md is logged with file:line, the
// answer reaches the chat, and the key is in no log.
func TestSkillsAndWebSearchEndToEnd(t *testing.T) {
	const key = "BSA-e2e-secret-1234"
	t.Setenv("BRAVE_API_KEY", key)
	search := fakesearch.New(key, fakesearch.Result{Title: "Pirate talk", URL: "https://example.com/pirates", Snippet: "Arr."})
	t.Cleanup(search.Close)
	llm := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
		switch res := r.ToolResults(); len(res) {
		case 0:
			return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "web_search", Arguments: `{"query":"pirate talk"}`}}}
		case 1:
			return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "skill", Arguments: `{"name":"greet"}`}}}
		default:
			return fakellm.Response{Content: "searched: " + firstLine(res[0].Content, 2) + " | skill: " + firstLine(res[1].Content, 3)}
		}
	})
	dir := t.TempDir()
	cfgText := strings.ReplaceAll(baseConfig, "%LLM%", llm.URL) + strings.ReplaceAll(skillsConfig, "%SEARCH%", search.BraveURL())
	cfgText = strings.Replace(cfgText, "default: assistant", "default: pirate", 1)
	for _, sub := range []string{"personas", "skills/greet", "skills/release-notes", "skills/broken"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "config.yaml"), cfgText)
	writeFile(t, filepath.Join(dir, "personas", "pirate.md"), "---\ndescription: A pirate.\nskills: [greet]\n---\nYou are a pirate.\n")
	writeFile(t, filepath.Join(dir, "skills", "greet", "SKILL.md"), "---\nname: greet\ndescription: Greet people in pirate speak.\n---\nSay \"Arr, matey!\" first.\n")
	writeFile(t, filepath.Join(dir, "skills", "release-notes", "SKILL.md"), "---\nname: release-notes\ndescription: Write release notes.\n---\nGroup changes.\n")
	writeFile(t, filepath.Join(dir, "skills", "broken", "SKILL.md"), "---\nname: broken\n---\nNo description.\n")

	cfg, err := config.Load(filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuf
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	mem := console.NewMemory("memory", 4000, time.Millisecond)
	d, err := New(context.Background(), Options{Config: cfg, Logger: log, Channels: []channels.Channel{mem},
		HTTPClient: llm.HTTPClient(), NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	mem.Attach(d.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-d.Ready()

	if err := mem.Say(context.Background(), channels.Message{ChatID: "c1", Direct: true,
		Sender: channels.Sender{ID: "ann", Name: "Ann"}, Text: "greet me like a pirate"}); err != nil {
		t.Fatal(err)
	}
	// The answer is streamed into one message (edited in place): wait for its final text.
	want := `searched: Results for "pirate talk" (brave): 1. Pirate talk | skill: Skill: greet  Say "Arr, matey!" first.`
	mem.WaitFor(t, "memory:c1", waitFor, "the final answer", func(s []console.Sent) bool {
		return len(s) == 1 && s[0].Text == want
	})
	sys := llm.Requests()[0].SystemPrompt()
	if !strings.Contains(sys, "- greet: Greet people in pirate speak.") || strings.Contains(sys, "release-notes") {
		t.Fatalf("system prompt:\n%s", sys)
	}
	if reqs := search.Requests(); len(reqs) != 1 || reqs[0].Token != key || reqs[0].Count != "2" {
		t.Fatalf("search requests: %+v", reqs)
	}
	broken := filepath.Join(dir, "skills", "broken", "SKILL.md") + ":1: front matter has no description"
	if !strings.Contains(logs.String(), broken) {
		t.Fatalf("logs lack %q:\n%s", broken, logs.String())
	}
	if strings.Contains(logs.String(), key) {
		t.Fatal("the Brave key is in the logs")
	}
	if y, err := cfg.RedactedYAML(); err != nil || strings.Contains(string(y), key) {
		t.Fatalf("RedactedYAML shows the key (err %v)", err)
	}
}

// firstLine joins the first n lines of a tool result (after the
// <tool-output …> marker line) with spaces.
func firstLine(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > 0 && strings.HasPrefix(lines[0], "<tool-output") {
		lines = lines[1:]
	}
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " ")
}
