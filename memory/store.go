// Package memory declares Switchboard's storage: the interfaces its users
// depend on and the record types they exchange. It holds no implementation;
// memory/bolt is the embedded default (one BoltDB file), memory/storetest the
// conformance suite every implementation runs. It knows nothing about
// platforms, the agent or the scheduler: everything above it stores its own
// JSON (payloads, job specs, kv values) or uses the types declared here.
//
// The interfaces follow the life of a message rather than a storage layout:
//
//   - Inbox: Accept (dedup + inbox item in one transaction, before the
//     platform is acknowledged), then InboxPending / InboxDone on replay;
//   - Sessions: AppendTurn commits a whole turn (messages, usage, the inbox
//     items it answers) in one transaction; LoadHistory reads it back sanitized
//     (see SanitizeHistory), so the model never sees a tool call without its
//     result;
//   - Lifecycle: the turn's commit (turn, answered items, the first send
//     intent, audit) and each delivery step (receipts, next intents, done
//     items), one transaction each: with Accept, three writes a message
//     (lifecycle.go);
//   - Outbox: a send intent before each platform call, its receipt after;
//   - Notes, Jobs (jobs and their runs), Audit and KV hold what the agent, the
//     scheduler, the handler and the CLI keep besides conversations;
//   - UsageBook: tokens per day, chat, persona, job and model, kept in the
//     turn's own commit (usage.go);
//   - Workspace: the files of each chat, bounded, changed in the turn's own
//     commit or by ApplyFiles, all of a change or none (workspace.go);
//   - Maintenance: retention (Prune), counts (Stats), the integrity check
//     `doctor` runs (Check) and Close;
//   - Prober, optional: whether the store can serve now (the database
//     answers, the file is in place), for readiness (health.go).
//
// Store composes them. Callers take the smallest interface they need; small
// interfaces declared where they are used (the handler's, the scheduler's)
// stay there.
//
// Contract details every implementation keeps (memory/storetest proves them):
// a message whose MessageID is empty is accepted without dedup; InboxPending
// returns every item not yet done, answered or not; ResetSession archives the
// conversation and keeps the session's persona; note ids are unique across
// scopes; DeleteJob deletes the job's runs; ListAudit and ListRuns return the
// newest records first; sentinel errors (ErrNotFound, ErrClosed, ErrInUse,
// ErrInvalidDatabase) are wrapped by every error where they apply.
package memory

import (
	"context"
	"io"
)

// Inbox is the intake side of a message: dedup and the inbox item, written
// before the platform is acknowledged, and the replay of unfinished items.
type Inbox interface {
	// Accept records (channel, message id) for dedup and stores the inbox item
	// in one transaction. duplicate is true (and nothing is written) when the
	// pair was seen within the dedup TTL.
	Accept(ctx context.Context, item InboxItem) (id uint64, duplicate bool, err error)
	// Seen reports whether (channel, message id) is within the dedup window.
	Seen(ctx context.Context, channel, messageID string) (bool, error)
	// InboxPending returns every item not yet done, oldest first.
	InboxPending(ctx context.Context) ([]InboxItem, error)
	// InboxDone removes finished items.
	InboxDone(ctx context.Context, ids ...uint64) error
}

// Sessions holds conversations: the turn commit, history, metadata, resets
// and their archives, export and moves.
type Sessions interface {
	AppendTurn(ctx context.Context, key string, turn Turn) error
	LoadHistory(ctx context.Context, key string, limit int) ([]Message, error)
	Session(ctx context.Context, key string) (SessionMeta, bool, error)
	ListSessions(ctx context.Context) ([]SessionMeta, error)
	SetSessionPersona(ctx context.Context, key, persona string) error
	ResetSession(ctx context.Context, key string) error
	ArchivedSessions(ctx context.Context, key string) ([]ArchiveInfo, error)
	LoadArchive(ctx context.Context, key, id string) (Archive, error)
	SessionTurns(ctx context.Context, key string) ([]Turn, error)
	ExportSession(ctx context.Context, key string, w io.Writer) error
	MoveSession(ctx context.Context, from, to string) error
}

// Outbox records deliveries: an intent per chunk before the platform call,
// its receipt (status, platform id) after.
type Outbox interface {
	OutboxIntent(ctx context.Context, r OutboxRecord) (uint64, error)
	OutboxResult(ctx context.Context, id uint64, status, platformID, errText string) error
	OutboxForTurn(ctx context.Context, turnID string) ([]OutboxRecord, error)
	OutboxPending(ctx context.Context) ([]OutboxRecord, error)
}

// Notes are remembered facts, isolated per scope.
type Notes interface {
	AddNote(ctx context.Context, scope, text string) (Note, error)
	ListNotes(ctx context.Context, scope string) ([]Note, error)
	SearchNotes(ctx context.Context, scope, query string) ([]Note, error)
	DeleteNote(ctx context.Context, scope string, id uint64) error
}

// Jobs holds scheduled jobs and their runs.
type Jobs interface {
	PutJob(ctx context.Context, j JobRecord) error
	GetJob(ctx context.Context, name string) (JobRecord, bool, error)
	ListJobs(ctx context.Context) ([]JobRecord, error)
	DeleteJob(ctx context.Context, name string) error
	AddRun(ctx context.Context, run JobRun) (uint64, error)
	UpdateRun(ctx context.Context, run JobRun) error
	ListRuns(ctx context.Context, job string, limit int) ([]JobRun, error)
}

// Audit is the audit log.
type Audit interface {
	Audit(ctx context.Context, rec AuditRecord) error
	ListAudit(ctx context.Context, f AuditFilter) ([]AuditRecord, error)
}

// KV is a small key/value area for state that has no record type (pairing
// codes, cursors, heartbeat bookkeeping).
type KV interface {
	KVGet(ctx context.Context, key string) ([]byte, bool, error)
	KVPut(ctx context.Context, key string, val []byte) error
	KVDelete(ctx context.Context, key string) error
}

// Maintenance is retention, counts, the integrity check and closing.
type Maintenance interface {
	// Prune applies the retention settings of Options.
	Prune(ctx context.Context) error
	// PruneCounts is Prune reporting what it removed.
	PruneCounts(ctx context.Context) (PruneResult, error)
	Stats(ctx context.Context) (Stats, error)
	// Check verifies the stored data; nil means consistent, else an error
	// wrapping ErrInvalidDatabase.
	Check() error
	// Path names where the data lives (a file path, a DSN without secrets).
	Path() string
	Close() error
}

// Store is everything a daemon needs from storage.
type Store interface {
	Inbox
	Lifecycle
	Sessions
	Outbox
	Notes
	Jobs
	Audit
	KV
	UsageBook
	Workspace
	Maintenance
}
