package memory

import (
	"encoding/json"
	"time"
)

// AuditRecord is one entry of the audit log (turn traces, admin commands,
// config edits).
type AuditRecord struct {
	ID      uint64    `json:"id"`
	Time    time.Time `json:"time"`
	Actor   string    `json:"actor"`
	Action  string    `json:"action"`
	Session string    `json:"session,omitempty"`
	Detail  string    `json:"detail,omitempty"`
	Error   string    `json:"error,omitempty"`
}

// AuditFilter selects audit records; zero fields do not filter.
type AuditFilter struct {
	Session string    // only records of this session
	Since   time.Time // only records at or after this time
	Limit   int       // at most this many (<= 0: all)
}

// Inbox item states.
const (
	InboxPending  = "pending"
	InboxAnswered = "answered"
)

// Outbox record states.
const (
	OutboxPending   = "pending"
	OutboxDelivered = "delivered"
	OutboxFailed    = "failed"
)

// InboxItem is one accepted inbound message waiting to be answered. Payload is
// owned by the caller (the channels package stores the normalized message).
type InboxItem struct {
	ID         uint64    `json:"id"`
	Channel    string    `json:"channel"`
	MessageID  string    `json:"message_id"`
	SessionKey string    `json:"session_key"`
	Payload    []byte    `json:"payload,omitempty"`
	Received   time.Time `json:"received"`
	State      string    `json:"state"` // InboxPending | InboxAnswered
	TurnID     string    `json:"turn_id,omitempty"`
	Answer     string    `json:"answer,omitempty"`
}

// OutboxRecord is one chunk of an answer: written as a send intent before the
// platform call, completed with the platform's receipt after it.
type OutboxRecord struct {
	ID         uint64    `json:"id"`
	Target     string    `json:"target"`
	TurnID     string    `json:"turn_id"`
	Chunk      int       `json:"chunk"`
	Text       string    `json:"text"`
	Status     string    `json:"status"` // OutboxPending | OutboxDelivered | OutboxFailed
	PlatformID string    `json:"platform_id,omitempty"`
	Error      string    `json:"error,omitempty"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
}

// JobRecord is a scheduled job as the scheduler stores it; Spec is its own JSON.
type JobRecord struct {
	Name    string          `json:"name"`
	Spec    json.RawMessage `json:"spec"`
	Created time.Time       `json:"created"`
	Updated time.Time       `json:"updated"`
}

// DeliveryStatus is the outcome of delivering a job's result to one target.
type DeliveryStatus struct {
	Target     string `json:"target"`
	Status     string `json:"status"`
	PlatformID string `json:"platform_id,omitempty"`
	Error      string `json:"error,omitempty"`
}

// JobRun is one execution of a job.
type JobRun struct {
	ID         uint64           `json:"id"`
	Job        string           `json:"job"`
	Scheduled  time.Time        `json:"scheduled"`
	Started    time.Time        `json:"started"`
	Finished   time.Time        `json:"finished"`
	Status     string           `json:"status"`
	Error      string           `json:"error,omitempty"`
	Deliveries []DeliveryStatus `json:"deliveries,omitempty"`
}

// Note is one remembered fact in a scope (a session key, or a user address such
// as "telegram:user:42").
type Note struct {
	ID      uint64    `json:"id"`
	Scope   string    `json:"scope"`
	Text    string    `json:"text"`
	Created time.Time `json:"created"`
}

// PruneResult counts what one Prune removed.
type PruneResult struct {
	Dedup  int `json:"dedup"`
	Audit  int `json:"audit"`
	Runs   int `json:"runs"`
	Outbox int `json:"outbox"`
}

// SessionMeta describes one session (one chat / thread).
type SessionMeta struct {
	Key     string    `json:"key"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// LastUserMessage is the time of the newest user message (zero if none).
	LastUserMessage time.Time `json:"last_user_message"`
	Turns           int       `json:"turns"`
	Messages        int       `json:"messages"`
	Usage           Usage     `json:"usage"`
	// Persona is the persona chosen for this session with /persona ("" = resolved from config).
	Persona string `json:"persona,omitempty"`
	// Archived lists the archive ids of earlier resets, oldest first.
	Archived []string `json:"archived,omitempty"`
	// LastTurnID is the id of the newest committed turn.
	LastTurnID string `json:"last_turn_id,omitempty"`
}

// ArchiveInfo describes one archived (reset) conversation of a session.
type ArchiveInfo struct {
	ID       string      `json:"id"`
	Archived time.Time   `json:"archived"`
	Meta     SessionMeta `json:"meta"`
}

// Archive is an archived conversation with its turns (each with its messages).
type Archive struct {
	ArchiveInfo
	Turns []Turn `json:"turns"`
}

// SessionExport is the JSON document ExportSession writes.
type SessionExport struct {
	Format   string      `json:"format"` // "switchboard.session.v1"
	Exported time.Time   `json:"exported"`
	Meta     SessionMeta `json:"meta"`
	// Turns of the live conversation, oldest first, each with its messages.
	Turns []Turn `json:"turns"`
	// Archives are the conversations before each reset, oldest first.
	Archives []Archive `json:"archives,omitempty"`
}

// ExportFormat is SessionExport.Format.
const ExportFormat = "switchboard.session.v1"

// Stats are counts for `switchboard doctor` and /status.
type Stats struct {
	Path          string `json:"path"`
	FileSize      int64  `json:"file_size"`
	Sessions      int    `json:"sessions"`
	Messages      int    `json:"messages"`
	Archives      int    `json:"archives"`
	Notes         int    `json:"notes"`
	DedupRecords  int    `json:"dedup_records"`
	InboxPending  int    `json:"inbox_pending"`
	InboxAnswered int    `json:"inbox_answered"`
	OutboxPending int    `json:"outbox_pending"`
	OutboxTotal   int    `json:"outbox_total"`
	Jobs          int    `json:"jobs"`
	Runs          int    `json:"runs"`
	Audit         int    `json:"audit"`
	KV            int    `json:"kv"`
}
