package heartbeat

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/heartbeat/schedule"
	"github.com/switchboard-bot/switchboard/memory"
)

// Directer runs a turn without a platform message (*agent.Agent).
type Directer interface {
	ProcessDirect(ctx context.Context, sessionKey, text string, opts agent.DirectOptions) (string, error)
}

// Deliverer sends text through the shared delivery path and returns the
// platform message ids of the chunks: an outbound.Router (package
// channels/outbound), which the daemon builds over the same Outbound as the
// hub's chat answers — not the hub itself.
type Deliverer interface {
	Deliver(ctx context.Context, target channels.Target, turnID, text string) ([]string, error)
}

// BusyChecker tells whether a session has a turn running or queued
// (*hub.Handler).
type BusyChecker interface {
	Busy(sessionKey string) bool
}

// KV is the small key-value part of the store used for persisted state.
type KV interface {
	KVGet(ctx context.Context, key string) ([]byte, bool, error)
	KVPut(ctx context.Context, key string, val []byte) error
	KVDelete(ctx context.Context, key string) error
}

// SessionStore is what the heartbeat reads and writes of sessions.
type SessionStore interface {
	ListSessions(ctx context.Context) ([]memory.SessionMeta, error)
	Session(ctx context.Context, key string) (memory.SessionMeta, bool, error)
	LoadHistory(ctx context.Context, key string, limit int) ([]memory.Message, error)
	// AppendTurn stores the greeting as a one-message assistant turn.
	AppendTurn(ctx context.Context, key string, turn memory.Turn) error
	ListNotes(ctx context.Context, scope string) ([]memory.Note, error)
}

// JobStore is what the jobs scheduler needs of the store.
type JobStore interface {
	PutJob(ctx context.Context, j memory.JobRecord) error
	GetJob(ctx context.Context, name string) (memory.JobRecord, bool, error)
	ListJobs(ctx context.Context) ([]memory.JobRecord, error)
	DeleteJob(ctx context.Context, name string) error
	AddRun(ctx context.Context, run memory.JobRun) (uint64, error)
	UpdateRun(ctx context.Context, run memory.JobRun) error
	ListRuns(ctx context.Context, job string, limit int) ([]memory.JobRun, error)
}

// Store is the subset of memory.Store this package uses.
type Store interface {
	KV
	SessionStore
	JobStore
}

// Defaults.
const (
	// DefaultGrace is how late a run may start and still be on time when a
	// job sets no grace.
	DefaultGrace = schedule.DefaultGrace
	// DefaultAlertAfter is the failure streak that alerts the admins.
	DefaultAlertAfter = 2
	// DefaultMaxAttempts bounds the attempts of a one-shot job.
	DefaultMaxAttempts = 3
	// DefaultRetryDelay is the wait before a failed one-shot is tried again.
	DefaultRetryDelay = time.Minute
	// RecentWindow is how recently a chat must have been active to be greeted
	// when heartbeat.targets is empty.
	RecentWindow = 30 * 24 * time.Hour
	// MaxJobsPerChat bounds the jobs one chat (its threads together) may
	// create with the schedule tool.
	MaxJobsPerChat = 50
	// MinChatJobInterval is the shortest time between two runs of a
	// recurring job created with the schedule tool (config jobs are free).
	MinChatJobInterval = 5 * time.Minute
	// MaxChatJobText bounds the text (reminder) or prompt (task), in
	// characters, of a job created with the schedule tool.
	MaxChatJobText = 4000
)

// Config is the heartbeat's own settings (the heartbeat: section of
// config.yaml, mapped by internal/daemon). There are no defaults here: the
// operator-facing defaults live in internal/config (Default), the one
// source; a zero MaxPerDay counts as 1 and an empty Schedule never ticks.
type Config struct {
	Enabled     bool
	Schedule    string        // cron spec (schedule.Parse)
	ActiveHours string        // "HH:MM-HH:MM", may cross midnight; "" = always
	IdleAfter   time.Duration // the user's last message must be older
	MaxPerDay   int
	Targets     []string // empty = every allowed direct chat seen in the last 30 days
}

// Options configure a Scheduler (and the Heartbeat and Jobs inside it).
// Store is required; the rest have defaults.
type Options struct {
	Heartbeat Config
	// Jobs are the jobs defined in config.yaml (Source SourceConfig).
	Jobs []JobSpec
	// Location is the bot's time zone (bot.timezone); default time.Local.
	Location *time.Location
	// Channels are the platform names a job's deliver_to may start with: the
	// platform registry's names, which the daemon passes in
	// (cfg.Platforms().Names()). Empty = any name (the syntax alone is checked).
	Channels []string

	Store Store
	// Agent runs greeting and task turns; nil makes those fail with an error.
	Agent Directer
	// Out delivers; nil makes deliveries fail with an error.
	Out Deliverer
	// Busy reports busy sessions; nil = never busy.
	Busy BusyChecker

	// IsDirectAllowed selects the sessions greeted when heartbeat.targets is
	// empty; default DefaultIsDirectAllowed.
	IsDirectAllowed func(sessionKey string) bool
	// PersonaFor resolves the persona of a chat from config (by_target,
	// by_channel); a persona set on the session with /persona wins. nil = "".
	PersonaFor func(sessionKey string) string
	// GreetingHints returns the persona's greeting hints (persona front matter).
	GreetingHints func(persona string) string
	// TargetLocation returns a target's time zone; nil or a nil result = Location.
	TargetLocation func(target string) *time.Location
	// Alert tells the admins something (a job keeps failing). nil = log only.
	Alert func(ctx context.Context, text string)

	// Sent records send_message deliveries; default a new SentLog.
	Sent *SentLog

	// Claimer, with replicas, makes each schedule slot fire once
	// cluster-wide (claim.go); nil = single host.
	Claimer SlotClaimer
	// OnJobsChange, if set, is told when this process changed the runtime
	// jobs (created, deleted, paused, ...); with replicas the daemon passes
	// it on to the leader, whose Scheduler.Resync reschedules them.
	OnJobsChange func()

	AlertAfter  int           // DefaultAlertAfter
	MaxAttempts int           // DefaultMaxAttempts
	RetryDelay  time.Duration // DefaultRetryDelay
	// SweepSpec is the cron spec of the catch-all jobs sweep (default "@every 1m").
	SweepSpec string

	// OnRun, if set, is told about every greeting attempt ("heartbeat",
	// decision action) and job run ("job", run status), for metrics.
	OnRun func(kind, status string)

	Now    func() time.Time // time.Now
	Logger *slog.Logger     // nil = discard
}

func (o Options) withDefaults() Options {
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.IsDirectAllowed == nil {
		o.IsDirectAllowed = DefaultIsDirectAllowed
	}
	if o.PersonaFor == nil {
		o.PersonaFor = func(string) string { return "" }
	}
	if o.GreetingHints == nil {
		o.GreetingHints = func(string) string { return "" }
	}
	if o.Sent == nil {
		o.Sent = NewSentLog(0)
	}
	if o.AlertAfter <= 0 {
		o.AlertAfter = DefaultAlertAfter
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = DefaultRetryDelay
	}
	if o.SweepSpec == "" {
		o.SweepSpec = "@every 1m"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

func (o Options) targetLocation(target string) *time.Location {
	if o.TargetLocation != nil {
		if loc := o.TargetLocation(target); loc != nil {
			return loc
		}
	}
	return o.Location
}

// DefaultIsDirectAllowed is the default selection of greeted sessions: keys
// that parse as a target without a thread part and are not internal sessions
// ("job:", "cli:", "heartbeat:").
func DefaultIsDirectAllowed(key string) bool {
	for _, p := range []string{"job:", "cli:", "heartbeat:"} {
		if strings.HasPrefix(key, p) {
			return false
		}
	}
	t, ok := channels.ParseTarget(key)
	return ok && t.ThreadID == ""
}

// The real pieces satisfy the interfaces (internal/daemon checks that the
// shared handler, channels/hub.Handler, is a BusyChecker).
var (
	_ Store     = memory.Store(nil)
	_ Directer  = (*agent.Agent)(nil)
	_ Deliverer = outbound.Router{}
)
