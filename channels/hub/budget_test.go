package hub_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// budgetRig is a handler over a real store and agent whose llm.budget is
// 100 tokens per chat; every model call uses 70.
func budgetRig(t *testing.T) (*fakellm.Server, *console.Memory, memory.Store, *hub.Handler) {
	t.Helper()
	llm := fakellm.Start(t, func(*fakellm.Request) fakellm.Response {
		return fakellm.Response{Content: "model answer", Usage: &fakellm.Usage{PromptTokens: 60, CompletionTokens: 10}}
	})
	st, err := bolt.Open(filepath.Join(t.TempDir(), "switchboard.db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	ag, err := agent.New(agent.Options{BaseURL: llm.URL, APIKey: "test-key", Model: "fake-model", MaxRetries: -1,
		Timeout: 5 * time.Second, HTTPClient: llm.HTTPClient(), Sessions: st, Location: berlin,
		Gate: agent.NewBudget(agent.BudgetOptions{PerChatDaily: 100, Book: st, Location: berlin})})
	if err != nil {
		t.Fatal(err)
	}
	ch := console.NewMemory("memory", 4000, 0)
	h := hub.NewHandler(hub.HandlerOptions{Store: st, Agent: ag,
		Access:   channels.AccessPolicy{Mode: channels.AccessOpen, Groups: channels.GroupsMention, Admins: []string{"memory:user:boss"}},
		Outbound: outbound.New(st, outbound.Options{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}),
		Usage: func() hub.UsageSettings {
			return hub.UsageSettings{PerChatDaily: 100, Location: berlin,
				Prices: map[string]hub.Price{"fake-model": {InputPerMTok: 1000, OutputPerMTok: 2000}}}
		},
	})
	h.Register(ch)
	ch.Attach(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		h.Close(ctx)
		_ = st.Close()
	})
	return llm, ch, st, h
}

func sayTo(t *testing.T, ch *console.Memory, chat, user, text string) {
	t.Helper()
	if err := ch.Say(context.Background(), channels.Message{ChatID: chat, Sender: channels.Sender{ID: user, Name: user}, Text: text, Direct: true}); err != nil {
		t.Fatal(err)
	}
}

func waitTexts(t *testing.T, ch *console.Memory, target string, n int) []string {
	t.Helper()
	got := ch.WaitFor(t, target, wait, "replies", func(s []console.Sent) bool { return len(s) >= n })
	return texts(got)
}

// Once a chat's budget is used up, its next message gets the short reply
// (no model request), the message is finished (nothing left to replay),
// and /usage shows the chat its use, budget and money.
func TestBudgetRefusalReply(t *testing.T) {
	llm, ch, st, h := budgetRig(t)
	sayTo(t, ch, "c1", "ann", "hello")
	if got := waitTexts(t, ch, "memory:c1", 1); got[0] != "model answer" {
		t.Fatalf("first answer %q", got[0])
	}
	// Counted, the crossing call (70 → 140 once more) completes.
	sayTo(t, ch, "c1", "ann", "and again")
	waitTexts(t, ch, "memory:c1", 2)
	sayTo(t, ch, "c1", "ann", "one more?")
	got := waitTexts(t, ch, "memory:c1", 3)
	if !strings.HasPrefix(got[2], "This chat has used its 100 tokens for today; I can answer again at 00:00 Europe/Berlin (in ") {
		t.Errorf("refusal reply %q", got[2])
	}
	if n := llm.RequestCount(); n != 2 {
		t.Errorf("the model got %d requests, want 2", n)
	}
	// An admin in the same chat is not limited.
	sayTo(t, ch, "c1", "boss", "admin question")
	if got := waitTexts(t, ch, "memory:c1", 4); got[3] != "model answer" || llm.RequestCount() != 3 {
		t.Errorf("admin's turn: %q after %d requests", got[3], llm.RequestCount())
	}
	sayTo(t, ch, "c1", "ann", "/usage")
	usage := waitTexts(t, ch, "memory:c1", 5)[4]
	for _, want := range []string{"Usage of this chat today: 210 tokens (180 in, 30 out) · 0.24",
		"Budget: 100 tokens a day for this chat, 0 left. It resets at 00:00 Europe/Berlin", "Last 7 days: 210 tokens · 0.24"} {
		if !strings.Contains(usage, want) {
			t.Errorf("/usage =\n%s\nwant it to contain %q", usage, want)
		}
	}
	// Once the handler has finished its work, nothing is left to replay.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	h.Close(ctx)
	pending, err := st.InboxPending(context.Background())
	if err != nil || len(pending) != 0 {
		t.Errorf("inbox after the refusal: %d items (%v), want none: %+v", len(pending), err, pending)
	}
}
