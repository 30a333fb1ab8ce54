package config

import (
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/channels/platform"
	"github.com/switchboard-bot/switchboard/internal/platforms"
)

// Secret holds a token or key; every rendering prints "[redacted]"
// (platform.Secret, shared with the platforms' own sections).
type Secret = platform.Secret

// NewSecret wraps a value (for tests and programmatic configs).
func NewSecret(v string) Secret { return platform.NewSecret(v) }

// Config is the whole of config.yaml.
type Config struct {
	Bot       Bot       `yaml:"bot"`
	LLM       LLM       `yaml:"llm"`
	Agent     Agent     `yaml:"agent"`
	Personas  Personas  `yaml:"personas"`
	Skills    Skills    `yaml:"skills"`
	Access    Access    `yaml:"access"`
	Channels  Channels  `yaml:"channels"`
	Heartbeat Heartbeat `yaml:"heartbeat"`
	Jobs      []Job     `yaml:"jobs"`
	Server    Server    `yaml:"server"`
	Log       Log       `yaml:"log"`
	Retention Retention `yaml:"retention"`
	Storage   Storage   `yaml:"storage"`
	Cluster   Cluster   `yaml:"cluster"`
	MCP       MCP       `yaml:"mcp"`
	Tasks     Tasks     `yaml:"tasks"`
	Workspace Workspace `yaml:"workspace"`
	Exec      Exec      `yaml:"exec"`  // the exec tool (exec.go)
	Media     Media     `yaml:"media"` // voice notes and documents (media.go)

	// Path is the file the configuration was loaded from ("" for Default()).
	Path string `yaml:"-"`

	// src records where each key came from in the file; nil for a Config
	// built in code.
	src *sourceMap
	// digest identifies the bytes the configuration was parsed from
	// (DigestOf); "" for a Config built in code.
	digest string
	// reg is the platform registry the config was built with (nil =
	// platforms.Builtin).
	reg *platform.Registry
}

// Platforms returns the platform registry the configuration was built with.
func (c *Config) Platforms() *platform.Registry {
	if c == nil || c.reg == nil {
		return platforms.Builtin
	}
	return c.reg
}

// Bot holds identity and global settings.
type Bot struct {
	Name     string   `yaml:"name"`
	DataDir  string   `yaml:"data_dir"` // BoltDB file: <data_dir>/switchboard.db
	Timezone string   `yaml:"timezone"` // IANA name, "Local" or "UTC"
	Admins   []string `yaml:"admins"`   // targets or user ids allowed admin commands
}

// Location returns the bot's time zone. An empty or "Local" timezone is
// time.Local; an unknown name (which Validate rejects) also falls back to
// time.Local.
func (b Bot) Location() *time.Location {
	return loadLocation(b.Timezone, time.Local)
}

// LLM configures the OpenAI-compatible model endpoint.
type LLM struct {
	BaseURL      string        `yaml:"base_url"` // up to and including /v1; "" = OpenAI
	APIKey       Secret        `yaml:"api_key"`
	Model        string        `yaml:"model"`
	Temperature  float32       `yaml:"temperature"`
	MaxTokens    int           `yaml:"max_tokens"`
	Timeout      time.Duration `yaml:"timeout"`
	MaxRetries   int           `yaml:"max_retries"`
	ToolProtocol string        `yaml:"tool_protocol"` // native | json | auto
	// MaxResponseChars bounds one model answer (content, reasoning and
	// tool-call arguments together, in characters): a longer answer is cut
	// there and marked, the rest is not read, and its tool calls are dropped.
	MaxResponseChars int `yaml:"max_response_chars"`
	// Fallbacks are asked in order when the endpoint before them fails with
	// a transient error (refused connection, timeout, 5xx, 429, a cut
	// stream) after its retries; a permanent refusal is reported instead.
	Fallbacks []Fallback `yaml:"fallbacks"`
	// Budget bounds tokens per chat and per day (budget.go).
	Budget Budget `yaml:"budget"`
	// Prices are money per million tokens by model name (optional), for
	// the console's and /usage's cost.
	Prices map[string]Price `yaml:"prices"`
}

// Fallback is one endpoint of llm.fallbacks. An empty base_url is
// llm.base_url's (another model on the same gateway); an empty model is the
// turn's (the same model elsewhere); an empty api_key on llm.base_url is
// llm.api_key.
type Fallback struct {
	BaseURL string `yaml:"base_url"`
	APIKey  Secret `yaml:"api_key"`
	Model   string `yaml:"model"`
}

// Agent bounds the ReAct loop.
type Agent struct {
	MaxIterations      int           `yaml:"max_iterations"`
	MaxToolCalls       int           `yaml:"max_tool_calls"`
	ToolRetries        int           `yaml:"tool_retries"`
	ToolRetryDelay     time.Duration `yaml:"tool_retry_delay"`
	ToolTimeout        time.Duration `yaml:"tool_timeout"`
	ObservationMaxLen  int           `yaml:"observation_max_len"`
	MaxHistory         int           `yaml:"max_history"`
	TokenBudget        int           `yaml:"token_budget"` // 0 = unlimited
	MaxConcurrentTurns int           `yaml:"max_concurrent_turns"`
	TurnTimeout        time.Duration `yaml:"turn_timeout"`
	// MaxMessageChars caps one incoming message and MaxTurnChars the text of
	// one turn (messages that arrived during a turn are merged into the next);
	// longer text is cut, marked, and the user told.
	MaxMessageChars int       `yaml:"max_message_chars"`
	MaxTurnChars    int       `yaml:"max_turn_chars"`
	Tools           []string  `yaml:"tools"`
	WebFetch        WebFetch  `yaml:"web_fetch"`
	WebSearch       WebSearch `yaml:"web_search"`
	// MaxAnswerChunks caps the platform messages one answer (streamed
	// drafts, the final answer, job and heartbeat deliveries) may take; a
	// longer answer is cut and ends with a "truncated" note.
	MaxAnswerChunks int `yaml:"max_answer_chunks"`
	// RequireApproval lists tools (names or globs such as github__delete_*)
	// whose calls wait for /approve in the chat; MCP tools annotated
	// destructive (and not read-only) always do. Jobs and heartbeat turns
	// cannot wait: there such calls are denied unless a job lists the tool
	// in its approve list.
	RequireApproval []string `yaml:"require_approval"`
	// ApprovalTimeout is how long a call waits for /approve or /deny before
	// it is refused.
	ApprovalTimeout time.Duration `yaml:"approval_timeout"`
}

// WebFetch configures the web_fetch tool.
type WebFetch struct {
	AllowDomains []string `yaml:"allow_domains"` // empty = any public host
	MaxBytes     int      `yaml:"max_bytes"`
	AllowPrivate bool     `yaml:"allow_private"` // allow loopback/private addresses
}

// WebSearch configures the web_search tool (enabled by listing web_search
// in agent.tools).
type WebSearch struct {
	Provider   string `yaml:"provider"`    // brave | searxng ("" = not configured)
	URL        string `yaml:"url"`         // SearXNG base URL (required); for brave an endpoint override ("" = the Brave API)
	APIKey     Secret `yaml:"api_key"`     // Brave subscription token (default ${BRAVE_API_KEY})
	MaxResults int    `yaml:"max_results"` // 1..20
}

// Skills says where skills (folders with a SKILL.md) live.
type Skills struct {
	Dir string `yaml:"dir"`
}

// Personas says where persona files live and which persona serves which chat.
type Personas struct {
	Dir       string            `yaml:"dir"`
	Default   string            `yaml:"default"`
	ByTarget  map[string]string `yaml:"by_target"`  // target → persona
	ByChannel map[string]string `yaml:"by_channel"` // channel → persona
}

// Access decides who may talk to the bot.
type Access struct {
	Mode      string   `yaml:"mode"`       // open | allowlist | pairing
	AllowFrom []string `yaml:"allow_from"` // user ids or targets
	Groups    string   `yaml:"groups"`     // mention | all | off
	AllowBots bool     `yaml:"allow_bots"` // answer other bots' messages
}

// Channels holds every registered platform's section (channels.<name>),
// each a pointer to the platform package's own Config type
// (telegram.ConfigIn(cfg.Channels)); the registry (Config.Platforms) says
// which platforms exist, their defaults and their validation.
type Channels = platform.Sections

// Heartbeat configures proactive greetings.
type Heartbeat struct {
	Enabled     bool          `yaml:"enabled"`
	Schedule    string        `yaml:"schedule"`     // cron spec
	ActiveHours string        `yaml:"active_hours"` // "HH:MM-HH:MM", may cross midnight; "" = always
	IdleAfter   time.Duration `yaml:"idle_after"`
	MaxPerDay   int           `yaml:"max_per_day"`
	Targets     []string      `yaml:"targets"` // empty = every allowed direct chat seen in the last 30 days
}

// Job is one scheduled task or reminder.
type Job struct {
	Name      string        `yaml:"name"`
	Schedule  string        `yaml:"schedule"` // cron spec (xor At)
	At        string        `yaml:"at"`       // RFC3339 one-shot time (xor Schedule)
	Timezone  string        `yaml:"timezone"` // "" = bot.timezone
	Kind      string        `yaml:"kind"`     // task | reminder
	Persona   string        `yaml:"persona"`  // "" = the target's persona
	Prompt    string        `yaml:"prompt"`   // task: what the agent is asked
	Text      string        `yaml:"text"`     // reminder: sent verbatim
	DeliverTo []string      `yaml:"deliver_to"`
	Misfire   string        `yaml:"misfire"` // skip | run_once
	Grace     time.Duration `yaml:"grace"`
	// Approve lists tools (names or globs) that need approval which this
	// task may call anyway: a job cannot wait for anyone's /approve.
	Approve []string `yaml:"approve"`
}

// Location returns the job's time zone, or fallback when the job has none.
func (j Job) Location(fallback *time.Location) *time.Location {
	if fallback == nil {
		fallback = time.Local
	}
	if j.Timezone == "" {
		return fallback
	}
	return loadLocation(j.Timezone, fallback)
}

// AtTime returns the parsed one-shot time of a job with `at`.
func (j Job) AtTime() (time.Time, bool) {
	if j.At == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, j.At)
	return t, err == nil
}

// Server configures the HTTP listener (/healthz /readyz /metrics, webhooks).
type Server struct {
	Listen     string `yaml:"listen"` // host:port; "" = no listener
	AdminToken Secret `yaml:"admin_token"`
	// UI serves the web console under /ui/ (default true). Off loopback it
	// needs admin_token, or the daemon leaves it off and says why.
	UI bool `yaml:"ui"`
}

// Log configures log/slog output.
type Log struct {
	Level  string `yaml:"level"`  // debug | info | warn | error
	Format string `yaml:"format"` // text | json
}

// SlogLevel maps Level to a slog.Level (info for anything unknown).
func (l Log) SlogLevel() slog.Level {
	switch strings.ToLower(l.Level) {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// Retention bounds what the store keeps.
type Retention struct {
	DedupTTL        time.Duration `yaml:"dedup_ttl"`
	AuditMaxAge     time.Duration `yaml:"audit_max_age"`     // 0 = keep forever
	AuditMaxRecords int           `yaml:"audit_max_records"` // 0 = no limit
	RunsPerJob      int           `yaml:"runs_per_job"`
}

// Storage picks the storage backend.
type Storage struct {
	// Backend is the memory.Store implementation: "bolt" (the embedded
	// BoltDB file at <data_dir>/switchboard.db, the default) or "postgres"
	// (memory/postgres: replicas share one database).
	Backend string `yaml:"backend"`
	// Postgres configures the postgres backend.
	Postgres StoragePostgres `yaml:"postgres"`
}

// Cluster configures replicas sharing one PostgreSQL database
// (storage.backend postgres; unused with bolt).
type Cluster struct {
	// LeaseTTL is how long a lease (scheduler leadership, Telegram polling,
	// a Discord shard) lives unrenewed: a dead replica's leases are taken
	// over within it. Default 15s.
	LeaseTTL time.Duration `yaml:"lease_ttl"`
}

// Tasks limits background tasks (the spawn tool; package internal/tasks).
type Tasks struct {
	// MaxPerChat is how many tasks one chat may have queued or running; the
	// spawn tool refuses more. Default 3.
	MaxPerChat int `yaml:"max_per_chat"`
	// MaxRunning is how many tasks run at once (across replicas); more wait
	// queued. Default 8.
	MaxRunning int `yaml:"max_running"`
	// MaxDuration bounds one task's run; a longer one fails. Default 30m.
	MaxDuration time.Duration `yaml:"max_duration"`
}

// StoragePostgres is storage.postgres.
type StoragePostgres struct {
	// URL is the database URL (postgres://user:password@host:5432/db or a
	// key=value DSN); a secret, since it usually carries the password.
	// Default ${DATABASE_URL}.
	URL Secret `yaml:"url"`
}

// ResolvePath resolves a path from the configuration (bot.data_dir,
// personas.dir): absolute paths are returned cleaned; relative ones are
// joined to the directory of the file the config was loaded from (or the
// working directory when Path is empty).
func (c *Config) ResolvePath(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	if c.Path == "" {
		return filepath.Clean(p)
	}
	return filepath.Join(filepath.Dir(c.Path), p)
}

// DBPath is the BoltDB file: <data_dir>/switchboard.db, resolved.
func (c *Config) DBPath() string {
	return filepath.Join(c.ResolvePath(c.Bot.DataDir), "switchboard.db")
}

func loadLocation(name string, fallback *time.Location) *time.Location {
	switch name {
	case "", "Local":
		return time.Local
	case "UTC":
		return time.UTC
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return fallback
	}
	return loc
}
