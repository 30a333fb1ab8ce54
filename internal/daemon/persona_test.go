package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// runOn starts a daemon on an existing directory (config.yaml inside) and
// returns it with its memory channel and a stop function.
func runOn(t *testing.T, llm *fakellm.Server, path string) (*Daemon, *console.Memory, func()) {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	mem := console.NewMemory("memory", 4000, time.Millisecond)
	d, err := New(context.Background(), Options{Config: cfg, Channels: []channels.Channel{mem},
		HTTPClient: llm.HTTPClient(), NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	mem.Attach(d.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	<-d.Ready()
	return d, mem, func() { cancel(); <-done }
}

func TestPersonaChoiceSurvivesRestart(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(baseConfig, "%LLM%", llm.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	say := func(mem *console.Memory, text string, n int) string {
		t.Helper()
		if err := mem.Say(context.Background(), channels.Message{ChatID: "c1", Direct: true,
			Sender: channels.Sender{ID: "ann", Name: "Ann"}, Text: text}); err != nil {
			t.Fatal(err)
		}
		return mem.WaitSent(t, "memory:c1", n, waitFor)[n-1].Text
	}

	_, mem, stop := runOn(t, llm, path)
	say(mem, "hello", 1)
	if list := say(mem, "/persona", 2); !strings.Contains(list, "Current persona: assistant") || !strings.Contains(list, "buddy") {
		t.Fatalf("/persona listing = %q", list)
	}
	if got := say(mem, "/persona buddy", 3); !strings.Contains(got, "now buddy") {
		t.Fatalf("/persona buddy = %q", got)
	}
	if got := say(mem, "/persona nobody", 4); !strings.Contains(got, `no persona "nobody"`) {
		t.Fatalf("/persona nobody = %q", got)
	}
	stop()

	_, mem2, stop2 := runOn(t, llm, path)
	defer stop2()
	say(mem2, "who are you now?", 1)
	last := llm.LastRequest()
	if sp := last.SystemPrompt(); !strings.Contains(sp, "You are Buddy") {
		t.Fatalf("after restart the chat's persona is not buddy:\n%s", sp)
	}
	var history []string
	for _, m := range last.Body.Messages {
		history = append(history, fakellm.MessageText(m))
	}
	if !strings.Contains(strings.Join(history, "\n"), "echo: hello") {
		t.Fatal("changing persona erased the history")
	}
}
