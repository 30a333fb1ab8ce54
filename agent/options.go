package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/switchboard-bot/switchboard/agent/defaults"
	redacturl "github.com/switchboard-bot/switchboard/internal/redact"
	"github.com/switchboard-bot/switchboard/internal/retry"
	"github.com/switchboard-bot/switchboard/memory"
)

// Tool protocols (llm.tool_protocol).
const (
	ProtocolAuto   = "auto"   // native, falling back to json when the endpoint rejects tools
	ProtocolNative = "native" // OpenAI function calling
	ProtocolJSON   = "json"   // the text protocol: one JSON object per reply
)

// Sessions is what the Agent needs from session storage. memory.Store
// implements it; NewMemorySessions is an in-memory implementation.
type Sessions interface {
	LoadHistory(ctx context.Context, key string, limit int) ([]memory.Message, error)
	AppendTurn(ctx context.Context, key string, turn memory.Turn) error
}

// Compactor is the hook for history compaction (summaries of older turns; a
// later issue builds it). When set, it is called with the loaded history
// before each turn and returns the history to use. If it fails, the loaded
// history is used unchanged so a session never wedges.
type Compactor interface {
	Compact(ctx context.Context, sessionKey string, history []memory.Message) ([]memory.Message, error)
}

// Persona is a resolved persona (a later issue loads them from files).
type Persona struct {
	Name        string
	Identity    string
	Model       string   // "" = Options.Model
	Temperature *float32 // nil = Options.Temperature
	MaxTokens   int      // 0 = Options.MaxTokens
	Tools       []string // nil = every registered tool; empty non-nil = none
	// Fallbacks replace Options.Fallbacks for this persona's turns (nil =
	// those; empty non-nil = none). An entry without a base URL is asked of
	// the primary's; one without a key uses the key of the configured
	// endpoint with the same base URL (failover.go).
	Fallbacks []Endpoint
	// Skills allowlists the skills the skill tool offers (nil = every
	// skill; empty non-nil = none).
	Skills []string
}

// PersonaSource resolves persona names ("" = the default persona).
type PersonaSource interface {
	Persona(name string) (Persona, bool)
}

// ApproveFunc may deny a tool call before it runs by returning an error; the
// turn then ends with FinishToolDenied after the model was told. ctx carries
// the turn's CallInfo; ApprovalPolicy.Func is the configured one (approval.go).
type ApproveFunc func(ctx context.Context, call memory.ToolCall) error

// DirectOptions configure a ProcessDirect turn.
type DirectOptions struct {
	Persona string
	NoTools bool
	Tools   []string // allowlist, nil = the persona's tools
	JobName string   // put into CallInfo
	// DeliverTo are the job's targets, put into CallInfo: the only chats
	// the job's turn may send to.
	DeliverTo []string
	Runtime   Runtime
	OnEvent   func(Event)
	// Admin exempts the turn from llm.budget unless admins are limited
	// (the operator's `switchboard ask`).
	Admin bool
	// BillTo is the chat whose usage this turn is (a background task's
	// chat): its tokens go into that chat's usage book and count against
	// its per-chat budget. "" = the turn's own session.
	BillTo string
	// TokenBudget bounds this turn's tokens (a task's budget) when it is
	// below Options.TokenBudget; 0 = Options.TokenBudget.
	TokenBudget int
	// FilesOf is the chat whose workspace the turn's file tools work in (a
	// background task's chat: it reads the chat's files and what it writes
	// is the chat's, within the chat's bounds); "" = the turn's session.
	FilesOf string
}

// Options configure an Agent. Zero values mean the defaults noted (DESIGN.md §4),
// taken from package agent/defaults, which config.Default() also uses;
// for counts, a negative value means "none" (e.g. ToolRetries: -1 = no retries).
type Options struct {
	BaseURL     string // up to and including /v1; "" = OpenAI
	APIKey      string
	Model       string   // default "gpt-4o-mini"
	Temperature *float32 // nil = the server's default
	MaxTokens   int      // 0 = the server's default

	Timeout           time.Duration // one model call attempt, first chunk to the end of the stream (120s)
	MaxRetries        int           // model call retries (3); negative = none
	RetryBase         time.Duration // first backoff (1s), doubling
	RetryMax          time.Duration // backoff cap (10s)
	MaxRetryAfter     time.Duration // a longer Retry-After is not waited for (60s)
	StreamIdleTimeout time.Duration // max gap between stream chunks (= Timeout)
	// MaxResponseChars bounds one model answer: content, reasoning and
	// tool calls (ids, names, arguments) together, in characters (200000); a
	// longer answer is cut there, marked, and the rest not read (see
	// ChatResponse.Cut).
	// Negative = no bound.
	MaxResponseChars int
	ToolProtocol     string // auto | native | json (auto)

	// Fallbacks are asked in order when the endpoint before them failed
	// with a transient error after its retries (llm.fallbacks; failover.go).
	Fallbacks []Endpoint
	// FailoverCooldown is how long an endpoint that failed is skipped by
	// new turns (DefaultFailoverCooldown).
	FailoverCooldown time.Duration
	// OnModelCall, when set, is told about every endpoint asked (metrics).
	OnModelCall func(ModelCall)

	MaxIterations     int           // model steps per turn (25)
	MaxToolCalls      int           // tool calls per turn (25)
	ToolRetries       int           // retries of a retryable tool failure (3)
	ToolRetryDelay    time.Duration // (1s)
	ToolTimeout       time.Duration // per tool call attempt (30s)
	ParallelTools     int           // concurrent tool calls within one step (4)
	ObservationMaxLen int           // characters of a tool result given to the model (4000)
	MaxHistory        int           // history messages loaded per turn (40)
	TokenBudget       int           // total tokens per turn, 0 = unlimited
	TurnTimeout       time.Duration // the whole turn, closing answer included; 0 = none
	// FinalGrace is the time kept for the closing answer at the end of
	// TurnTimeout (15s, at most a quarter of TurnTimeout).
	FinalGrace time.Duration

	// ContextTokens is the model's context window in tokens; when set, the
	// verbatim history is also kept under half of it (estimated at about 4
	// bytes per token) by compaction. 0 = bound history by MaxHistory only.
	ContextTokens int

	Location *time.Location   // runtime-context clock zone (time.Local)
	Now      func() time.Time // (time.Now)
	// Sleep waits d or until ctx ends (backoffs, tool retry delays); tests
	// inject one that does not wait.
	Sleep func(ctx context.Context, d time.Duration) error

	HTTPClient *http.Client
	Logger     *slog.Logger

	Sessions  Sessions // default NewMemorySessions()
	Personas  PersonaSource
	Tools     *Registry
	Approve   ApproveFunc
	Compactor Compactor // nil: see Notes
	// Gate, when set, is asked before every model call of a turn
	// (llm.budget; budget.go).
	Gate Gate
	// OnUsage, when set, is told every turn's tokens per model (chat, job
	// and heartbeat turns alike; metrics).
	OnUsage func([]memory.ModelUsage)

	// Notes is where the chat's long-term notes are read for the prompt
	// (scope = the session key); memory.Store implements it. nil = no notes.
	// When Compactor is nil and Notes is also a NotesStore, the Agent uses
	// its own summarizing compactor (compact.go), which keeps the summary of
	// older turns in the session's notes; otherwise history is only cut to
	// MaxHistory.
	Notes NotesSource
	// NotesMaxCount / NotesMaxChars bound the notes shown in the prompt:
	// the newest that fit (DefaultNotesMaxCount, DefaultNotesMaxChars).
	NotesMaxCount int
	NotesMaxChars int

	// Workspace is where the chats' files are read (memory.Store); each
	// turn stages its file changes over it and commits them with the turn
	// (workspace.go). nil = no workspace: the file tools refuse.
	Workspace WorkspaceStore
	// WorkspaceLimits returns the bounds a turn's files are checked
	// against, read at the start of each turn (hot reload); nil = the
	// defaults (memory.WorkspaceLimits).
	WorkspaceLimits func() memory.WorkspaceLimits

	// Media turns a turn's attachments into model input (voice notes
	// transcribed, documents read: agent/media, attachments.go); nil =
	// images go to the model, other attachments are only named.
	Media MediaPreparer
}

func defInt(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// defNone is defInt for a count whose negative value means "none": it
// stays negative, so options defaulted twice (the agent's, then each
// endpoint's provider's) keep meaning none rather than the default.
func defNone(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return -1
	}
	return v
}

func defDur(v, def time.Duration) time.Duration {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// withDefaults returns o with zero values replaced by the defaults.
func (o Options) withDefaults() Options {
	if o.Model == "" {
		o.Model = defaults.Model
	}
	o.Timeout = defDur(o.Timeout, defaults.Timeout)
	o.MaxRetries = defNone(o.MaxRetries, defaults.MaxRetries)
	o.RetryBase = defDur(o.RetryBase, time.Second)
	o.RetryMax = defDur(o.RetryMax, 10*time.Second)
	o.MaxRetryAfter = defDur(o.MaxRetryAfter, 60*time.Second)
	o.StreamIdleTimeout = defDur(o.StreamIdleTimeout, o.Timeout)
	o.MaxResponseChars = defNone(o.MaxResponseChars, defaults.MaxResponseChars)
	if o.ToolProtocol == "" {
		o.ToolProtocol = defaults.ToolProtocol
	}
	o.FailoverCooldown = defDur(o.FailoverCooldown, DefaultFailoverCooldown)
	o.MaxIterations = max(1, defInt(o.MaxIterations, defaults.MaxIterations))
	o.MaxToolCalls = defInt(o.MaxToolCalls, defaults.MaxToolCalls)
	o.ToolRetries = defInt(o.ToolRetries, defaults.ToolRetries)
	o.ToolRetryDelay = defDur(o.ToolRetryDelay, defaults.ToolRetryDelay)
	o.ToolTimeout = defDur(o.ToolTimeout, defaults.ToolTimeout)
	o.ParallelTools = max(1, defInt(o.ParallelTools, 4))
	o.ObservationMaxLen = defInt(o.ObservationMaxLen, defaults.ObservationMaxLen)
	o.MaxHistory = defInt(o.MaxHistory, defaults.MaxHistory)
	o.ContextTokens = max(0, o.ContextTokens)
	o.NotesMaxCount = defInt(o.NotesMaxCount, DefaultNotesMaxCount)
	o.NotesMaxChars = defInt(o.NotesMaxChars, DefaultNotesMaxChars)
	if o.TokenBudget < 0 {
		o.TokenBudget = 0
	}
	o.FinalGrace = defDur(o.FinalGrace, 15*time.Second)
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = retry.Sleep
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Sessions == nil {
		o.Sessions = NewMemorySessions()
	}
	if o.Tools == nil {
		o.Tools = NewRegistry()
	}
	return o
}

// String describes the options without secrets (the API key is never shown).
func (o Options) String() string {
	key := "unset"
	if o.APIKey != "" {
		key = "set"
	}
	return fmt.Sprintf("agent.Options{BaseURL:%q Model:%q APIKey:%s ToolProtocol:%q MaxIterations:%d MaxToolCalls:%d Fallbacks:%v}",
		redacturl.URL(o.BaseURL), o.Model, key, o.ToolProtocol, o.MaxIterations, o.MaxToolCalls, o.Fallbacks)
}

// GoString is String, so %#v does not print the API key either.
func (o Options) GoString() string { return o.String() }

// LogValue keeps the API key out of structured logs.
func (o Options) LogValue() slog.Value { return slog.StringValue(o.String()) }
