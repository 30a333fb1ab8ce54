package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/memory"
)

// NameSpawn is the spawn tool's name.
const NameSpawn = "spawn"

// Spawn limits.
const (
	SpawnTitleMax  = 80
	SpawnPromptMax = 8000
	SpawnToolsMax  = 32
)

// Spawner records a background task (*tasks.Runner): the per-chat limit is
// its to check, its error text the model's to read.
type Spawner interface {
	Spawn(ctx context.Context, t memory.TaskRecord) (memory.TaskRecord, error)
}

type spawnArgs struct {
	Title  string   `json:"title" jsonschema:"A short name for the task, shown to the user when it finishes."`
	Prompt string   `json:"prompt" jsonschema:"Everything the task's assistant needs to know: it does not see this conversation."`
	Tools  []string `json:"tools,omitempty" jsonschema:"The tools the task may use (names or globs); omit for all of yours."`
}

var spawnSchema = sync.OnceValue(func() json.RawMessage {
	return agent.MustArgsSchema[spawnArgs](func(p map[string]*jsonschema.Schema) {
		p["title"].MinLength, p["title"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(SpawnTitleMax)
		p["prompt"].MinLength, p["prompt"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(SpawnPromptMax)
		p["tools"].MaxItems = jsonschema.Ptr(SpawnToolsMax)
	})
})

// Spawn is the spawn tool: it starts a background task — a sub-agent with
// its own prompt and tools, running apart from this turn — and answers at
// once ("started task t7"); the task's result comes to the chat as a reply
// naming it when it finishes. It works in chat turns and in jobs' turns (the
// result goes to the job's targets), never in a task's own turn.
type Spawn struct{ s Spawner }

// NewSpawn returns the spawn tool over s.
func NewSpawn(s Spawner) *Spawn { return &Spawn{s: s} }

// Name implements agent.Tool.
func (*Spawn) Name() string { return NameSpawn }

// Description implements agent.Tool.
func (*Spawn) Description() string {
	return "Start a background task: another assistant works on the prompt on its own (research, long " +
		"multi-step work) while this conversation goes on, and its result is posted to this chat when it " +
		"finishes. Returns the task's id at once; the user can list tasks with /tasks and stop one with /stop <id>."
}

// Schema implements agent.Tool.
func (*Spawn) Schema() json.RawMessage { return spawnSchema() }

// Call implements agent.Tool.
func (t *Spawn) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	var a spawnArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", agent.Permanent(fmt.Errorf("spawn: %w", err))
	}
	ci, ok := agent.CallInfoFrom(ctx)
	if !ok || ci.SessionKey == "" {
		return "", agent.Permanent(errors.New("spawn: no chat to report to in this turn"))
	}
	if strings.HasPrefix(ci.JobName, "task:") || strings.Contains(ci.SessionKey, "#task:") {
		return "", agent.Permanent(errors.New("spawn: a background task cannot start tasks; do the work yourself"))
	}
	title, prompt := strings.TrimSpace(a.Title), strings.TrimSpace(a.Prompt)
	switch {
	case title == "" || prompt == "":
		return "", agent.Permanent(errors.New("spawn: title and prompt must not be empty"))
	case utf8.RuneCountInString(title) > SpawnTitleMax:
		return "", agent.Permanent(fmt.Errorf("spawn: the title is longer than %d characters", SpawnTitleMax))
	case utf8.RuneCountInString(prompt) > SpawnPromptMax:
		return "", agent.Permanent(fmt.Errorf("spawn: the prompt is longer than %d characters", SpawnPromptMax))
	}
	var list []string
	if a.Tools != nil {
		list = []string{}
		for _, n := range a.Tools {
			if n = strings.TrimSpace(n); n != "" && n != NameSpawn {
				list = append(list, n)
			}
		}
	}
	rec := memory.TaskRecord{Chat: ci.SessionKey, Title: title, Persona: ci.Persona, Prompt: prompt, Tools: list,
		Key: spawnKey(ci, title, prompt, list)}
	if ci.JobName != "" {
		rec.Job, rec.DeliverTo = ci.JobName, append([]string(nil), ci.DeliverTo...)
	}
	got, err := t.s.Spawn(ctx, rec)
	if err != nil {
		return "", agent.Permanent(fmt.Errorf("spawn: %w", err))
	}
	return fmt.Sprintf("started task %s (%q); its result will be posted to the chat when it finishes", got.ID, got.Title), nil
}

// spawnKey makes a spawn call idempotent within its turn: a turn replayed
// after a crash (the same turn id, the inbox's) asking for the same task
// gets the task the first run started, not a second one.
func spawnKey(ci agent.CallInfo, title, prompt string, tools []string) string {
	if ci.TurnID == "" {
		return ""
	}
	h := sha256.New()
	for _, s := range append([]string{ci.SessionKey, title, prompt}, tools...) {
		fmt.Fprintf(h, "%d:%s|", len(s), s)
	}
	return ci.TurnID + "|" + hex.EncodeToString(h.Sum(nil)[:12])
}
