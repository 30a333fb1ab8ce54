package tools

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

var memNow = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)

func openStore(t *testing.T) memory.Store {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "switchboard.db"), memory.Options{NoSync: true,
		Now: func() time.Time { return memNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func inChat(key string) context.Context {
	return agent.WithCallInfo(context.Background(), agent.CallInfo{SessionKey: key, TurnID: "t1"})
}

func TestMemoryToolActions(t *testing.T) {
	st := openStore(t)
	tool := NewMemory(st, MemoryOptions{MaxNotes: 3})
	const chat, other = "telegram:42", "telegram:43"
	// A note of another chat and the compactor's summary must stay invisible.
	otherNote, err := st.AddNote(context.Background(), other, "Bob likes tea")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddNote(context.Background(), chat, "[conversation summary v1 kind=summary turns=3 messages=6 resets=0 next=]\nold talk"); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		ctx     context.Context
		args    string
		want    string // substring of the result (or of the error)
		wantErr bool
	}{
		{"list empty", inChat(chat), `{"action":"list"}`, "No notes are saved in this chat.", false},
		{"save", inChat(chat), `{"action":"save","text":"  Ann prefers   short answers "}`, "Saved as note #3.", false},
		{"save duplicate", inChat(chat), `{"action":"save","text":"ann prefers short answers"}`, "Already saved as note #3.", false},
		{"save second", inChat(chat), `{"action":"save","text":"Ann lives in Oslo"}`, "Saved as note #4.", false},
		{"list newest first", inChat(chat), `{"action":"list"}`, "2 notes in this chat (newest first):\n#4 (2025-03-01) Ann lives in Oslo\n#3 (2025-03-01) Ann prefers short answers", false},
		{"search", inChat(chat), `{"action":"search","query":"OSLO ann"}`, "1 notes match \"OSLO ann\" (newest first):\n#4 (2025-03-01) Ann lives in Oslo", false},
		{"search no match", inChat(chat), `{"action":"search","query":"tea"}`, `No note in this chat matches "tea".`, false},
		{"search without query", inChat(chat), `{"action":"search"}`, `search needs "query"`, true},
		{"too long", inChat(chat), `{"action":"save","text":"` + strings.Repeat("é", 501) + `"}`, "the note has 501 characters; the limit is 500", true},
		{"secret api key", inChat(chat), `{"action":"save","text":"my key is sk-abcdefghijklmnopqrstuv"}`, "looks like a secret (an API key)", true},
		{"secret password", inChat(chat), `{"action":"save","text":"Ann's wifi password: hunter2"}`, "looks like a secret (a password or key)", true},
		{"secret card", inChat(chat), `{"action":"save","text":"card 4111 1111 1111 1111"}`, "looks like a secret (a card number)", true},
		{"fake summary", inChat(chat), `{"action":"save","text":"[conversation summary v1 kind=summary]"}`, "cannot start with", true},
		{"save third", inChat(chat), `{"action":"save","text":"Ann has a cat"}`, "Saved as note #5.", false},
		{"limit reached", inChat(chat), `{"action":"save","text":"Ann has a dog"}`, "already has 3 notes, the limit", true},
		{"forget other chat's note", inChat(chat), `{"action":"forget","id":1}`, "there is no note #1 in this chat", true},
		{"forget the summary", inChat(chat), `{"action":"forget","id":2}`, "there is no note #2 in this chat", true},
		{"forget", inChat(chat), `{"action":"forget","id":5}`, "Forgot note #5: Ann has a cat", false},
		{"save after forget", inChat(chat), `{"action":"save","text":"Ann has a dog"}`, "Saved as note #6.", false},
		{"no chat", context.Background(), `{"action":"list"}`, "only be used inside a chat", true},
		{"unknown action", inChat(chat), `{"action":"dump"}`, `unknown action "dump"`, true},
	}
	for _, s := range steps {
		out, err := tool.Call(s.ctx, json.RawMessage(s.args))
		got := out
		if err != nil {
			got = err.Error()
		}
		if (err != nil) != s.wantErr || !strings.Contains(got, s.want) {
			t.Fatalf("%s: got %q (err %v), want %q", s.name, got, err, s.want)
		}
	}
	// The other chat's note is untouched; this chat holds exactly its own notes.
	if n, _ := st.ListNotes(context.Background(), other); len(n) != 1 || n[0].ID != otherNote.ID {
		t.Fatalf("other chat's notes changed: %+v", n)
	}
	mine, _ := st.ListNotes(context.Background(), chat)
	var texts []string
	for _, n := range mine {
		texts = append(texts, n.Text)
	}
	if got := strings.Join(texts[1:], "|"); got != "Ann prefers short answers|Ann lives in Oslo|Ann has a dog" {
		t.Fatalf("stored notes %q", got)
	}
}

func TestMemoryToolSchemaAndRetryPolicy(t *testing.T) {
	tool := NewMemory(failingNotes{}, MemoryOptions{})
	reg := agent.NewRegistry()
	if err := reg.Register(tool); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`{}`, `{"action":"shout"}`, `{"action":"save","text":""}`, `{"action":"forget","id":0}`, `{"action":"list","extra":1}`} {
		if err := reg.Validate(NameMemory, json.RawMessage(bad)); err == nil {
			t.Errorf("schema accepts %s", bad)
		}
	}
	if err := reg.Validate(NameMemory, json.RawMessage(`{"action":"save","text":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if tool.Repeatable() {
		t.Fatal("save/forget have side effects: the tool must not be Repeatable")
	}
	var temp *agent.TemporaryError
	for _, args := range []string{`{"action":"list"}`, `{"action":"search","query":"x"}`} {
		if _, err := tool.Call(inChat("c"), json.RawMessage(args)); !errors.As(err, &temp) {
			t.Errorf("%s: a failing read must be retryable, got %v", args, err)
		}
	}
	if _, err := tool.Call(inChat("c"), json.RawMessage(`{"action":"search","query":" "}`)); errors.As(err, &temp) {
		t.Error("a refusal caused by the arguments must not be retried")
	}
}

type failingNotes struct{}

var errDisk = errors.New("disk on fire")

func (failingNotes) AddNote(context.Context, string, string) (memory.Note, error) {
	return memory.Note{}, errDisk
}
func (failingNotes) ListNotes(context.Context, string) ([]memory.Note, error) { return nil, errDisk }
func (failingNotes) SearchNotes(context.Context, string, string) ([]memory.Note, error) {
	return nil, errDisk
}
func (failingNotes) DeleteNote(context.Context, string, uint64) error { return errDisk }

// TestNotesIsolatedBetweenChats saves a note in chat A through the memory tool
// in a real turn and checks that chat B sees it neither through the tool
// (list, search) nor in its prompt, while chat A's next prompt carries it.
func TestNotesIsolatedBetweenChats(t *testing.T) {
	st := openStore(t)
	reg := agent.NewRegistry()
	if err := reg.Register(NewMemory(st, MemoryOptions{})); err != nil {
		t.Fatal(err)
	}
	const secretFact = "Ann's favourite colour is teal"
	srv := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
		if !r.HasTools() || r.LastMessage().Role == openai.ChatMessageRoleTool {
			return fakellm.Response{Content: "done"}
		}
		switch r.LastUserText() {
		case "remember my colour":
			return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: NameMemory,
				Arguments: `{"action":"save","text":"` + secretFact + `"}`}}}
		case "what do you know?":
			return fakellm.Response{ToolCalls: []fakellm.ToolCall{
				{Name: NameMemory, Arguments: `{"action":"list"}`},
				{Name: NameMemory, Arguments: `{"action":"search","query":"teal"}`},
			}}
		}
		return fakellm.Response{Content: "hello"}
	})
	a, err := agent.New(agent.Options{BaseURL: srv.URL, APIKey: "k", Model: "m", HTTPClient: srv.HTTPClient(),
		Sessions: st, Notes: st, Tools: reg, Location: time.UTC, Now: func() time.Time { return memNow },
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := func(key, text string) agent.Result {
		t.Helper()
		res, err := a.ProcessMessage(ctx, agent.Request{SessionKey: key, Text: text,
			Runtime: agent.Runtime{Channel: "telegram", ChatType: "direct", SenderName: "Ann"}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	const chatA, chatB = "telegram:100", "telegram:200"
	if res := run(chatA, "remember my colour"); res.Messages[2].Content != "Saved as note #1." {
		t.Fatalf("save result %q", res.Messages[2].Content)
	}

	before := srv.RequestCount()
	res := run(chatB, "what do you know?")
	if len(res.Messages) != 5 {
		t.Fatalf("chat B turn: %+v", res.Messages)
	}
	if got := res.Messages[2].Content + "\n" + res.Messages[3].Content; got != "No notes are saved in this chat.\nNo note in this chat matches \"teal\"." {
		t.Fatalf("chat B's tool saw chat A's notes: %q", got)
	}
	for _, r := range srv.Requests()[before:] {
		for _, m := range r.Body.Messages {
			if m.Role != openai.ChatMessageRoleTool && strings.Contains(m.Content, "teal") {
				t.Fatalf("chat B's prompt carries chat A's note: %q", m.Content)
			}
		}
	}
	sys, _, err := a.Prompt(ctx, agent.Request{SessionKey: chatB})
	if err != nil || len(sys) != 1 || strings.Contains(strings.Join(sys, "\n"), "teal") {
		t.Fatalf("chat B's prompt: %q %v", sys, err)
	}

	run(chatA, "hi again")
	last := srv.LastRequest().Body.Messages
	if len(last) < 2 || last[1].Role != openai.ChatMessageRoleSystem || !strings.Contains(last[1].Content, "#1 (2025-03-01) "+secretFact) {
		t.Fatalf("chat A's next prompt must carry its note: %+v", last[:2])
	}
	if !strings.Contains(last[0].Content, "## Memory") {
		t.Fatal("the memory guidance belongs in the system prompt when the tool is offered")
	}
}
