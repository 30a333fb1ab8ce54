package agent

import (
	"context"
	"errors"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

// Media is an attachment of a user message (images are sent to the model as
// data URLs).
type Media struct {
	MIME string
	Name string
	Data []byte
}

// Runtime holds the volatile facts of one turn (platform, chat type, sender).
// They go into a marked runtime-context block next to the user message, never
// into the system prompt, so the system prompt stays byte-identical across turns.
type Runtime struct {
	Channel    string // "telegram", "slack", "discord", "console", "" for direct turns
	ChatType   string // "direct", "group", "thread", "job", "heartbeat"
	SenderName string
	// Formatting describes the platform's markup rules for the model, e.g.
	// "Telegram HTML is produced from your Markdown; keep to basic Markdown."
	Formatting string
}

// Request is one chat turn to run.
type Request struct {
	SessionKey string
	Text       string
	Media      []Media
	Runtime    Runtime
	// Persona is the resolved persona name; "" means the default persona.
	Persona string
	// ResolvePersona, if set, names the persona instead of Persona, given
	// the metadata of the turn's own session (own; a zero SessionMeta for a
	// new session). The agent reads it with the turn's history in the same
	// read (memory.TurnReader), so the persona costs no read of its own; own
	// is nil when the store has no TurnReader (the resolver reads it).
	ResolvePersona func(ctx context.Context, own *memory.SessionMeta) string
	// Tools, when non-nil, restricts the tools offered in this turn (allowlist).
	Tools []string
	// NoTools runs the turn without any tools.
	NoTools bool
	// Sources are opaque inbox ids stored with the committed turn (memory.Turn.Sources).
	Sources []uint64
	// TurnID, if set, is used as the committed turn's ID (memory.Turn.ID); the
	// handler derives it from the inbox so a replayed turn keeps its id.
	TurnID string
	// Admin says the turn runs for a bot admin: llm.budget does not limit
	// it unless configured to (budget.go).
	Admin bool
	// Received is when the turn's first message was accepted (the hub's
	// inbox); the user message carries it as its time, so the wait in the
	// queue shows. Zero = the turn's start.
	Received time.Time
	// BillTo, TokenBudget and FilesOf: DirectOptions'.
	BillTo      string
	TokenBudget int
	FilesOf     string
	// direct marks a ProcessDirect turn: a budget refusal is returned as
	// its error.
	direct bool
	// OnEvent, if set, receives streaming events. It is called from the turn's
	// goroutine and must not block for long.
	OnEvent func(Event)
	// Commit, if set, commits the finished turn instead of
	// Options.Sessions.AppendTurn; it gets the turn's trace so the caller can
	// store what it decides about the turn (its answer's first send intent,
	// audit records) in the same transaction (memory.Lifecycle). Its ctx is
	// not canceled with the turn and ends 10 s after the call. An error is
	// returned from ProcessMessage like a failed AppendTurn.
	Commit func(ctx context.Context, turn memory.Turn, trace []TraceEntry) error
}

// EventKind says what an Event carries.
type EventKind int

const (
	EventTextDelta EventKind = iota + 1
	EventReasoningDelta
	EventToolCall
	EventToolResult
	EventTurnEnd
	// EventReset means text streamed so far in this step was not the answer
	// (it preceded a tool call): a streaming consumer should discard it.
	EventReset
	// EventSpoke means the user's message was a voice note, transcribed
	// (Result.Spoke, known before the commit): the handler may answer with a
	// voice note too.
	EventSpoke
)

// Event is one streaming event of a turn.
type Event struct {
	Kind     EventKind
	Text     string           // delta text, or tool result text
	ToolCall *memory.ToolCall // for EventToolCall / EventToolResult
	IsError  bool             // tool result was an error
	Usage    memory.Usage     // EventTurnEnd
	Start    time.Time        // EventTurnEnd
	End      time.Time        // EventTurnEnd
}

// FinishReason says why a turn ended.
type FinishReason string

const (
	FinishFinal         FinishReason = "final"
	FinishMaxIterations FinishReason = "max_iterations"
	FinishBudget        FinishReason = "budget"
	FinishCanceled      FinishReason = "canceled"
	FinishToolDenied    FinishReason = "tool_denied"
	FinishAPIError      FinishReason = "api_error"
)

// ErrModelNotConfigured is returned (wrapped) when no API key is set for an
// endpoint that needs one. Its text tells the operator what to set.
var ErrModelNotConfigured = errors.New("no model API key is configured: set OPENAI_API_KEY (or llm.api_key in config.yaml), or point llm.base_url at a local OpenAI-compatible server such as Ollama (http://127.0.0.1:11434/v1)")
