package memory

import "time"

// Roles of stored messages (the OpenAI chat roles).
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// ToolCall is one function call the model asked for.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // raw JSON text as the model produced it
}

// MediaRef describes an attachment of a stored user message. Image bytes are
// not kept in history; only what they were.
type MediaRef struct {
	MIME string `json:"mime"`
	Name string `json:"name,omitempty"`
	Size int    `json:"size,omitempty"`
}

// Message is one entry of a session's history.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	Reasoning  string     `json:"reasoning,omitempty"`
	Media      []MediaRef `json:"media,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"` // for RoleTool
	Name       string     `json:"name,omitempty"`         // tool name for RoleTool; sender name for RoleUser
	Time       time.Time  `json:"time"`
}

// Usage is token usage as reported by the model endpoint.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Add returns u + o.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		TotalTokens:      u.TotalTokens + o.TotalTokens,
	}
}

// ModelUsage is the tokens one model used in a turn. Model is the name
// the endpoint was asked for ("gpt-4o-mini"); Endpoint names which
// configured endpoint answered ("primary", "fallback 1", …, redacted of
// credentials) so two endpoints serving the same model name stay apart.
type ModelUsage struct {
	Model    string `json:"model"`
	Endpoint string `json:"endpoint,omitempty"`
	Usage    Usage  `json:"usage"`
}

// Turn is everything one agent turn added to a session: the user message(s),
// assistant tool calls, every tool result and the final answer. It is committed
// in one transaction.
type Turn struct {
	ID           string    `json:"id"`
	Messages     []Message `json:"messages"`
	Usage        Usage     `json:"usage"`
	Started      time.Time `json:"started"`
	Ended        time.Time `json:"ended"`
	FinishReason string    `json:"finish_reason"`
	// Sources are the inbox item ids this turn answers. Committing the turn marks
	// them answered (with Answer) in the same transaction, so a restart delivers
	// the stored answer instead of running the turn again.
	Sources []uint64 `json:"sources,omitempty"`
	// Answer is the final text delivered to the user.
	Answer string `json:"answer,omitempty"`
	// Models is the usage per model that answered a call of this turn, in
	// order of first use (more than one only after a failover). Usage is
	// their sum.
	Models []ModelUsage `json:"models,omitempty"`
	// BillTo is the chat whose usage book the turn's tokens go to when it
	// is not the turn's own session (a background task's chat); "" = the
	// session. Used by the commit only (UsageRowsOf), not stored.
	BillTo string `json:"-"`
	// Persona is the persona that answered; Job the job whose turn this was
	// ("heartbeat" for a greeting, "" for a chat turn). Both are kept with
	// the turn and in the usage book (usage.go).
	Persona string `json:"persona,omitempty"`
	Job     string `json:"job,omitempty"`
	// Day is the day (DayLayout, in the bot's timezone) the turn's tokens
	// count toward in the usage book; "" = the UTC day of Ended. It is an
	// input of the commit, not stored with the turn.
	Day string `json:"-"`
	// Files are the workspace changes of the turn (the agent's per-turn
	// overlay), applied in the turn's own commit within FileLimits; a change
	// that no longer fits is dropped, not the turn (workspace.go). Inputs of
	// the commit, not stored with the turn.
	Files      *WorkspaceChange `json:"-"`
	FileLimits WorkspaceLimits  `json:"-"`
	// FilesOf is the chat whose workspace Files change when it is not the
	// turn's own session (a background task works in its chat's files);
	// "" = the session. An input of the commit, not stored.
	FilesOf string `json:"-"`
}
