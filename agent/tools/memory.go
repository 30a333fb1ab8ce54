package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/memory"
)

// NameMemory is the memory tool's name (agent.MemoryToolName: the agent adds
// the memory guidance to the system prompt when it is offered).
const NameMemory = agent.MemoryToolName

// Memory tool defaults.
const (
	DefaultNoteMaxChars = 500 // characters per note
	DefaultMaxNotes     = 200 // notes per chat
	DefaultListLimit    = 50  // notes shown by list and search
)

// NotesStore is what the memory tool needs from storage; memory.Store
// implements it. Scopes are session keys.
type NotesStore interface {
	AddNote(ctx context.Context, scope, text string) (memory.Note, error)
	ListNotes(ctx context.Context, scope string) ([]memory.Note, error)
	SearchNotes(ctx context.Context, scope, query string) ([]memory.Note, error)
	DeleteNote(ctx context.Context, scope string, id uint64) error
}

// MemoryOptions configures NewMemory; zero fields take the defaults.
type MemoryOptions struct {
	NoteMaxChars int            // DefaultNoteMaxChars
	MaxNotes     int            // DefaultMaxNotes
	ListLimit    int            // DefaultListLimit
	Location     *time.Location // dates shown with notes; nil = UTC
}

// Memory is the memory tool: short long-term notes of the chat it runs in,
// with the actions save, search, list and forget.
//
// Scope: the session key of the running turn (agent.CallInfo), and nothing
// else. A direct chat's session is one person, so its notes are that
// person's; a group's or thread's notes belong to that group or thread. A
// note saved in one chat is never listed, found or forgotten from another:
// every store call is made with the caller's own scope, and forgetting checks
// the id against that scope's notes.
//
// The compactor's conversation summary lives in the same scope; the tool
// hides it (agent.IsSummaryNote) and refuses to save text that imitates it.
//
// Save and forget have side effects, so the tool is not Repeatable; errors of
// the read-only actions (list, search) are marked *agent.TemporaryError and
// may be retried by the agent.
type Memory struct {
	store  NotesStore
	o      MemoryOptions
	schema func() json.RawMessage // memorySchema(o.NoteMaxChars), built at first use
	saveM  sync.Mutex             // serializes the count check and the write of save
}

var (
	_ agent.Tool       = (*Memory)(nil)
	_ agent.Repeatable = (*Memory)(nil)
)

// NewMemory returns the memory tool over store.
func NewMemory(store NotesStore, o MemoryOptions) *Memory {
	if o.NoteMaxChars <= 0 {
		o.NoteMaxChars = DefaultNoteMaxChars
	}
	if o.MaxNotes <= 0 {
		o.MaxNotes = DefaultMaxNotes
	}
	if o.ListLimit <= 0 {
		o.ListLimit = DefaultListLimit
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	return &Memory{store: store, o: o, schema: sync.OnceValue(func() json.RawMessage { return memorySchema(o.NoteMaxChars) })}
}

// Name implements agent.Tool.
func (m *Memory) Name() string { return NameMemory }

// Description implements agent.Tool.
func (m *Memory) Description() string {
	return fmt.Sprintf("Long-term notes of this chat, kept across conversations. "+
		"action \"save\" stores one short stable fact or preference the user stated (\"text\", at most %d characters; never secrets); "+
		"\"list\" shows the newest notes; \"search\" finds notes containing every word of \"query\"; "+
		"\"forget\" deletes the note with number \"id\" (as shown by list or search).", m.o.NoteMaxChars)
}

// Schema implements agent.Tool.
func (m *Memory) Schema() json.RawMessage { return m.schema() }

// memoryArgs are the memory tool's arguments; its schema is generated from
// them (memorySchema).
type memoryArgs struct {
	Action string `json:"action" jsonschema:"What to do."`
	Text   string `json:"text,omitempty" jsonschema:"save: the fact to remember, one short sentence."`
	Query  string `json:"query,omitempty" jsonschema:"search: words that must all appear in the note."`
	ID     uint64 `json:"id,omitempty" jsonschema:"forget: the number of the note to delete."`
}

// memorySchema is the schema of memoryArgs; text is bounded by the
// configured note length.
func memorySchema(noteMaxChars int) json.RawMessage {
	return agent.MustArgsSchema[memoryArgs](func(p map[string]*jsonschema.Schema) {
		p["action"].Enum = []any{"save", "search", "list", "forget"}
		p["text"].MinLength = jsonschema.Ptr(1)
		p["text"].MaxLength = jsonschema.Ptr(noteMaxChars)
		p["query"].MinLength = jsonschema.Ptr(1)
		p["query"].MaxLength = jsonschema.Ptr(200)
		p["id"].Minimum = jsonschema.Ptr(1.0)
	})
}

// Repeatable implements agent.Repeatable: save and forget have side effects.
func (m *Memory) Repeatable() bool { return false }

// Call implements agent.Tool.
func (m *Memory) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	var a memoryArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", fmt.Errorf("memory: bad arguments: %w", err)
	}
	ci, ok := agent.CallInfoFrom(ctx)
	if !ok || ci.SessionKey == "" {
		return "", errors.New("memory: notes can only be used inside a chat")
	}
	scope := ci.SessionKey
	switch a.Action {
	case "save":
		return m.save(ctx, scope, a.Text)
	case "list":
		out, err := m.list(ctx, scope)
		return out, temporary(err)
	case "search":
		out, err := m.search(ctx, scope, a.Query)
		return out, temporary(err)
	case "forget":
		return m.forget(ctx, scope, a.ID)
	}
	return "", fmt.Errorf("memory: unknown action %q (use save, search, list or forget)", a.Action)
}

// temporary marks store errors of read-only actions as safe to retry.
func temporary(err error) error {
	if err == nil {
		return nil
	}
	var user *userError
	if errors.As(err, &user) {
		return err
	}
	return &agent.TemporaryError{Err: err}
}

// userError is a refusal caused by the arguments (never retried).
type userError struct{ msg string }

func (e *userError) Error() string { return e.msg }

func refuse(format string, args ...any) error { return &userError{msg: fmt.Sprintf(format, args...)} }

// visible returns the model's notes of scope (summary notes hidden), oldest first.
func visible(notes []memory.Note) []memory.Note {
	out := notes[:0:0]
	for _, n := range notes {
		if !agent.IsSummaryNote(n.Text) {
			out = append(out, n)
		}
	}
	return out
}

func (m *Memory) line(n memory.Note) string {
	return fmt.Sprintf("#%d (%s) %s", n.ID, n.Created.In(m.o.Location).Format("2006-01-02"), strings.Join(strings.Fields(n.Text), " "))
}

func (m *Memory) save(ctx context.Context, scope, text string) (string, error) {
	text = strings.Join(strings.Fields(text), " ") // one line: notes are short facts
	switch {
	case text == "":
		return "", refuse("memory: save needs \"text\": the fact to remember")
	case utf8.RuneCountInString(text) > m.o.NoteMaxChars:
		return "", refuse("memory: the note has %d characters; the limit is %d. Save a shorter note (one fact).",
			utf8.RuneCountInString(text), m.o.NoteMaxChars)
	case agent.IsSummaryNote(text):
		return "", refuse("memory: a note cannot start with %q", "[conversation summary")
	}
	if kind := secretKind(text); kind != "" {
		return "", refuse("memory: not saved: the text looks like a secret (%s). Secrets are never stored in notes.", kind)
	}
	m.saveM.Lock()
	defer m.saveM.Unlock()
	all, err := m.store.ListNotes(ctx, scope)
	if err != nil {
		return "", &agent.TemporaryError{Err: fmt.Errorf("memory: read notes: %w", err)}
	}
	notes := visible(all)
	norm := strings.ToLower(text)
	for _, n := range notes {
		if strings.ToLower(strings.Join(strings.Fields(n.Text), " ")) == norm {
			return fmt.Sprintf("Already saved as note #%d.", n.ID), nil
		}
	}
	if len(notes) >= m.o.MaxNotes {
		return "", refuse("memory: this chat already has %d notes, the limit. Forget notes that no longer matter, then save again.", len(notes))
	}
	n, err := m.store.AddNote(ctx, scope, text)
	if err != nil {
		return "", fmt.Errorf("memory: save: %w", err)
	}
	return fmt.Sprintf("Saved as note #%d.", n.ID), nil
}

func (m *Memory) render(notes []memory.Note, header string) string {
	var sb strings.Builder
	sb.WriteString(header)
	shown := 0
	for i := len(notes) - 1; i >= 0 && shown < m.o.ListLimit; i-- {
		sb.WriteString("\n")
		sb.WriteString(m.line(notes[i]))
		shown++
	}
	if left := len(notes) - shown; left > 0 {
		fmt.Fprintf(&sb, "\n[%d older notes not shown; search to find them]", left)
	}
	return sb.String()
}

func (m *Memory) list(ctx context.Context, scope string) (string, error) {
	all, err := m.store.ListNotes(ctx, scope)
	if err != nil {
		return "", fmt.Errorf("memory: list: %w", err)
	}
	notes := visible(all)
	if len(notes) == 0 {
		return "No notes are saved in this chat.", nil
	}
	return m.render(notes, fmt.Sprintf("%d notes in this chat (newest first):", len(notes))), nil
}

func (m *Memory) search(ctx context.Context, scope, query string) (string, error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return "", refuse("memory: search needs \"query\": words the note must contain")
	}
	found, err := m.store.SearchNotes(ctx, scope, query)
	if err != nil {
		return "", fmt.Errorf("memory: search: %w", err)
	}
	notes := visible(found)
	if len(notes) == 0 {
		return fmt.Sprintf("No note in this chat matches %q.", query), nil
	}
	return m.render(notes, fmt.Sprintf("%d notes match %q (newest first):", len(notes), query)), nil
}

func (m *Memory) forget(ctx context.Context, scope string, id uint64) (string, error) {
	if id == 0 {
		return "", refuse("memory: forget needs \"id\": the note's number as shown by list or search")
	}
	all, err := m.store.ListNotes(ctx, scope)
	if err != nil {
		return "", &agent.TemporaryError{Err: fmt.Errorf("memory: read notes: %w", err)}
	}
	var target *memory.Note
	for _, n := range visible(all) {
		if n.ID == id {
			target = &n
			break
		}
	}
	if target == nil {
		return "", refuse("memory: there is no note #%d in this chat (list shows the notes)", id)
	}
	if err := m.store.DeleteNote(ctx, scope, id); err != nil {
		if errors.Is(err, memory.ErrNotFound) {
			return "", refuse("memory: there is no note #%d in this chat", id)
		}
		return "", fmt.Errorf("memory: forget #%d: %w", id, err)
	}
	return fmt.Sprintf("Forgot note #%d: %s", id, strings.Join(strings.Fields(target.Text), " ")), nil
}

// secretPattern is a well-known credential format or a "password: …" phrase.
type secretPattern struct {
	kind string
	re   *regexp.Regexp
}

// secretPatterns are compiled at the first note saved, not at start (an idle
// daemon keeps none of their ~20 KB of programs).
var secretPatterns = sync.OnceValue(func() []secretPattern {
	return []secretPattern{
		{"an API key", regexp.MustCompile(`\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}`)},
		{"a Slack token", regexp.MustCompile(`\bx(?:ox[abprs]|app)-[A-Za-z0-9-]{10,}`)},
		{"a GitHub token", regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{20,}`)},
		{"an AWS access key", regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`)},
		{"a Telegram bot token", regexp.MustCompile(`\b\d{8,10}:[A-Za-z0-9_-]{35}\b`)},
		{"a private key", regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----`)},
		{"a password or key", regexp.MustCompile(`(?i)\b(?:password|passwd|passcode|pin|api[ _-]?key|secret|token)\b\s*(?:is|:|=)\s*\S+`)},
	}
})

var cardRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b(?:\d[ -]?){12,18}\d\b`) })

// secretKind names the kind of secret text seems to contain ("" if none).
func secretKind(text string) string {
	for _, p := range secretPatterns() {
		if p.re.MatchString(text) {
			return p.kind
		}
	}
	for _, c := range cardRE().FindAllString(text, -1) {
		if luhn(c) {
			return "a card number"
		}
	}
	return ""
}

// luhn reports whether the digits of s pass the Luhn check.
func luhn(s string) bool {
	sum, double, n := 0, false, 0
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c < '0' || c > '9' {
			continue
		}
		d := int(c - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
		n++
	}
	return n >= 13 && sum%10 == 0
}
