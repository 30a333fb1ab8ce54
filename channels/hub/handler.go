// Package hub is the shared Handler every platform's messages go through,
// behind the contract in package channels:
//
//   - intake (intake.go): self and bot filter, persisted dedup, access
//     control and pairing (pairing.go), the durable inbox written before the
//     adapter acknowledges the platform, and Replay of unfinished items;
//   - the per-session queue (queue.go): one turn at a time per session, many
//     sessions in parallel up to a cap, mid-turn messages batched into the
//     next turn, /stop;
//   - commands (commands.go), answered without the model; admin features
//     reach the daemon through the Admin interface;
//   - approval in chat (approval.go): a tool call that needs approval waits
//     for /approve or /deny, which are answered beside the session's queue;
//   - the turn (turn.go): the agent run with typing and streaming, commit
//     retries while the store cannot write (storage.go), the commit of the
//     answer's first send intent with the turn (commit.go), input caps
//     (inputcap.go), operator cancellation (interrupt.go);
//   - persona resolution (personas.go): which persona serves a chat, per-chat
//     choices, and the conversion of persona data to the agent's type.
//
// Delivery — formatting, the cap, retries, the outbox's intents and
// receipts, streamed drafts — is package channels/outbound; the hub hands it
// each answer (with the inbox items it finishes) and its streaming deltas,
// and keeps what a chat answer adds: a chat that moved takes its session
// along, a delivery the store cannot record is retried.
//
// hub sits between the adapters (which import only channels) and
// internal/daemon, which wires it; it uses agent, memory and
// channels/outbound.
package hub

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/memory"
)

// Store is what the handler needs from the durable store.
type Store interface {
	KV
	outbound.Outbox
	Accept(ctx context.Context, item memory.InboxItem) (id uint64, duplicate bool, err error)
	InboxPending(ctx context.Context) ([]memory.InboxItem, error)
	InboxDone(ctx context.Context, ids ...uint64) error
	ResetSession(ctx context.Context, key string) error
	Audit(ctx context.Context, rec memory.AuditRecord) error
}

// Agent runs one chat turn.
type Agent interface {
	ProcessMessage(ctx context.Context, req agent.Request) (agent.Result, error)
}

// Personas lets the handler resolve and change a chat's persona (/persona).
type Personas interface {
	// Names lists the available personas.
	Names() []string
	// Resolve returns the persona a turn in target uses.
	Resolve(ctx context.Context, target channels.Target) string
	// Choose records a per-chat persona choice.
	Choose(ctx context.Context, target channels.Target, name string) error
}

// ownSessionResolver is what Personas may add (Resolver does): Resolve with
// the metadata of the target's own session already read by the agent.
type ownSessionResolver interface {
	ResolveOwn(ctx context.Context, target channels.Target, own *memory.SessionMeta) string
}

var _ ownSessionResolver = (*Resolver)(nil)

// Observer receives the handler's events (metrics). Methods must be fast
// and safe for concurrent use.
type Observer interface {
	MessageIn(channel string)
	MessageDropped(channel, reason string)
	TurnDone(channel string, res agent.Result, err error, d time.Duration)
}

type nopObserver struct{}

// Compile-time checks of what the hub's types implement.
var (
	_ channels.Sink = (*Handler)(nil)
	_ Observer      = nopObserver{}
	// Every store implementation (memory.Store) serves the hub.
	_ Store         = memory.Store(nil)
	_ TurnCommitter = memory.Store(nil)
	_ SessionMover  = memory.Store(nil)
	_ SessionStore  = memory.Store(nil)
)

func (nopObserver) MessageIn(string)                                    {}
func (nopObserver) MessageDropped(string, string)                       {}
func (nopObserver) TurnDone(string, agent.Result, error, time.Duration) {}

// Admin is what the admin commands and the delivery check need from the
// daemon around the hub; the daemon implements it. It is optional: without
// it /status shows only the hub's counters, /jobs and /heartbeat answer that
// no scheduler is running, /reload that reloading is not available, and
// every final answer is delivered.
type Admin interface {
	// Status returns daemon facts (channels, model, jobs) for /status.
	Status(ctx context.Context) string
	// Reload re-reads the configuration for /reload; who is the admin.
	Reload(ctx context.Context, who string) (string, error)
	// Jobs describes the scheduled jobs for /jobs.
	Jobs(ctx context.Context) string
	// HeartbeatEnabled reports whether proactive greetings are on (/heartbeat).
	HeartbeatEnabled(ctx context.Context) bool
	// SetHeartbeat turns proactive greetings on or off (/heartbeat on|off).
	SetHeartbeat(ctx context.Context, on bool) error
	// AlreadySent reports whether text already reached target during the
	// turn (the send_message tool); the final answer is then not sent twice.
	AlreadySent(turnID, target, text string) bool
}

// ErrClosed is returned by Handle after Close started: the adapter must not
// acknowledge, the platform redelivers after the restart.
var ErrClosed = errors.New("handler is shutting down")

// ErrBusy is returned by Handle when a session's queue is full (backpressure):
// the message is not persisted and not acknowledged, so the platform redelivers.
var ErrBusy = errors.New("session queue is full")

// HandlerOptions configures a Handler.
type HandlerOptions struct {
	Store  Store
	Agent  Agent
	Access channels.AccessPolicy
	// MaxConcurrentTurns caps agent turns running at once (default 128, as
	// agent.max_concurrent_turns).
	MaxConcurrentTurns int
	// MaxQueue caps messages waiting per session (default 1000).
	MaxQueue int
	// Outbound delivers the answers (default: one over Store with default
	// options).
	Outbound *outbound.Outbound
	Personas Personas // optional
	// Admin serves the admin commands (/status facts, /reload, /jobs,
	// /heartbeat) and tells which answers send_message already delivered
	// (optional).
	Admin Admin
	// Formatting tells the model each platform's markup, by channel name.
	Formatting map[string]string
	BotName    string
	// Claims, when set, coordinates sessions across replicas sharing the
	// store (claims.go); nil runs as one process. ClaimSettle is how long a
	// claimed session waits before reading its backlog (default
	// DefaultClaimSettle).
	Claims      Claims
	ClaimSettle time.Duration
	// Observer receives events for metrics (optional); if it also implements
	// StorageObserver it learns of store write failures.
	Observer Observer
	Logger   *slog.Logger
	Now      func() time.Time
	// StorageRetryBase and StorageRetryMax bound the wait between retries of a
	// step that failed to write to the store (see storage.go); defaults
	// DefaultStorageRetryBase and DefaultStorageRetryMax.
	StorageRetryBase, StorageRetryMax time.Duration
	// MaxMessageChars and MaxTurnChars cap one incoming message and the text
	// of one turn (see inputcap.go); 0 = DefaultMaxMessageChars,
	// DefaultMaxTurnChars.
	MaxMessageChars, MaxTurnChars int
	// ApprovalTimeout is how long a tool call waits for /approve or /deny
	// before it is refused (approval.go); 0 = DefaultApprovalTimeout.
	ApprovalTimeout time.Duration
	// Usage returns the current budgets and prices for /usage (usage.go);
	// nil = no budget, no prices, UTC days.
	Usage func() UsageSettings
	// Tasks serves /tasks and /stop <id> (tasks.go); nil = no background tasks.
	Tasks TaskControl
	// WorkspaceLimits returns the workspace bounds /files shows (files.go);
	// nil = the defaults.
	WorkspaceLimits func() memory.WorkspaceLimits
	// Speech returns the current Speaker (media.speech), read at each turn
	// (voice.go): a chat that sent a voice note gets the answer as a voice
	// note too on platforms that take them; nil, or a nil result, = text
	// only.
	Speech func() Speaker
}

// HandlerStats are counters since start.
type HandlerStats struct {
	Received, Duplicates, Ignored, Denied, Turns, TurnErrors, Commands uint64
	QueueDepth, ActiveSessions                                         int
	// Intake is how many messages are being taken in now: received, not
	// yet queued or dropped (the inbox write may take a while on a slow
	// disk, and the session is not active before it is queued).
	Intake int
}

// Handler is the one place every platform's messages go through: filtering,
// persisted dedup, access control, the durable inbox, commands, per-session
// FIFO order with a global concurrency cap, the agent turn with streaming, and
// delivery through the shared outbound path.
type Handler struct {
	store    Store
	agent    Agent
	out      *outbound.Outbound
	personas Personas
	admin    Admin
	format   map[string]string
	botName  string
	log      *slog.Logger
	now      func() time.Time
	maxQueue int
	obs      Observer
	pairing  *Pairing
	access   atomic.Pointer[channels.AccessPolicy]
	sem      chan struct{}

	storage             storageHealth
	caps                inputCaps
	retryBase, retryMax time.Duration
	quit                chan struct{} // closed when Close starts: storage retries give up

	baseCtx   context.Context
	cancelAll context.CancelFunc
	workers   sync.WaitGroup
	// operatorCancel: turns canceled from now on were canceled by the
	// operator (Ctrl-C): they are finished, not replayed (interrupt.go).
	operatorCancel atomic.Bool

	mu          sync.Mutex
	chans       map[string]channels.Channel
	sessions    map[string]*session
	claims      Claims
	claimSettle time.Duration
	// sideHandled are inbox items answered beside the queue in claims mode
	// (approvals another replica stored); the session's worker skips them.
	sideHandled map[uint64]bool
	closed      bool
	appr        approvalState // pending tool approvals (approval.go)
	usage       func() UsageSettings
	tasks       TaskControl
	wsLimits    func() memory.WorkspaceLimits
	voice       voiceState // voice replies (voice.go)

	received, duplicates, ignored, denied, turns, turnErrors, commands atomic.Uint64
	intake                                                             atomic.Int64 // HandlerStats.Intake
}

// NewHandler returns a Handler. Register channels before Replay and before
// any adapter calls Handle.
func NewHandler(o HandlerOptions) *Handler {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxConcurrentTurns <= 0 {
		o.MaxConcurrentTurns = 128
	}
	if o.MaxQueue <= 0 {
		o.MaxQueue = 1000
	}
	if o.Outbound == nil {
		o.Outbound = outbound.New(o.Store, outbound.Options{Logger: o.Logger})
	}
	if o.BotName == "" {
		o.BotName = "Switchboard"
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	if o.ClaimSettle <= 0 {
		o.ClaimSettle = DefaultClaimSettle
	}
	if o.StorageRetryBase <= 0 {
		o.StorageRetryBase = DefaultStorageRetryBase
	}
	if o.StorageRetryMax <= 0 {
		o.StorageRetryMax = DefaultStorageRetryMax
	}
	o.StorageRetryMax = max(o.StorageRetryMax, o.StorageRetryBase)
	ctx, cancel := context.WithCancel(context.Background())
	h := &Handler{store: o.Store, agent: o.Agent, out: o.Outbound, personas: o.Personas, admin: o.Admin,
		format: o.Formatting, botName: o.BotName, log: o.Logger, now: o.Now, maxQueue: o.MaxQueue, obs: o.Observer,
		pairing: NewPairing(o.Store, o.Now), sem: make(chan struct{}, o.MaxConcurrentTurns),
		baseCtx: ctx, cancelAll: cancel, chans: map[string]channels.Channel{}, sessions: map[string]*session{},
		retryBase: o.StorageRetryBase, retryMax: o.StorageRetryMax, quit: make(chan struct{}), claims: o.Claims,
		claimSettle: o.ClaimSettle, usage: o.Usage, tasks: o.Tasks, wsLimits: o.WorkspaceLimits}
	pol := o.Access
	h.access.Store(&pol)
	h.caps.set(o.MaxMessageChars, o.MaxTurnChars)
	h.SetApprovalTimeout(o.ApprovalTimeout)
	h.voice = voiceState{speech: o.Speech, since: time.Now()}
	return h
}

// Register makes ch available for delivery.
func (h *Handler) Register(ch channels.Channel) {
	h.mu.Lock()
	h.chans[ch.Name()] = ch
	h.mu.Unlock()
}

// Unregister removes the channel called name (config disabled it).
func (h *Handler) Unregister(name string) {
	h.mu.Lock()
	delete(h.chans, name)
	h.mu.Unlock()
}

// Channel returns the registered channel called name.
func (h *Handler) Channel(name string) (channels.Channel, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.chans[name]
	return ch, ok
}

// SetAccess replaces the access policy (config reload).
func (h *Handler) SetAccess(p channels.AccessPolicy) { h.access.Store(&p) }

// Access returns the current access policy.
func (h *Handler) Access() channels.AccessPolicy { return *h.access.Load() }

// Pairing returns the pairing registry.
func (h *Handler) Pairing() *Pairing { return h.pairing }

// Outbound returns the delivery path.
func (h *Handler) Outbound() *outbound.Outbound { return h.out }

// Stats returns counters and queue depth.
func (h *Handler) Stats() HandlerStats {
	h.mu.Lock()
	depth := 0
	for _, s := range h.sessions {
		depth += len(s.queue)
	}
	active := len(h.sessions)
	h.mu.Unlock()
	return HandlerStats{Received: h.received.Load(), Duplicates: h.duplicates.Load(), Ignored: h.ignored.Load(),
		Denied: h.denied.Load(), Turns: h.turns.Load(), TurnErrors: h.turnErrors.Load(),
		Commands: h.commands.Load(), QueueDepth: depth, ActiveSessions: active, Intake: int(h.intake.Load())}
}

// Busy reports whether key has a turn running or queued (the heartbeat skips busy sessions).
func (h *Handler) Busy(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.sessions[key]
	return ok
}

// Deliver sends text to target through the outbound path, outside a turn
// (the hub's notices: a paired user told, an approval decided). turnID keys
// the outbox records ("" = not recorded). The heartbeat and jobs deliver
// through an outbound.Router of their own, not through the hub.
func (h *Handler) Deliver(ctx context.Context, target channels.Target, turnID, text string) ([]string, error) {
	return outbound.Router{Out: h.out, Channels: h.Channel}.Deliver(ctx, target, turnID, text)
}

func (h *Handler) closing() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// Close stops intake, lets running turns finish until ctx is done, then
// cancels what is left (their inbox items stay for the next start) and waits.
func (h *Handler) Close(ctx context.Context) {
	h.mu.Lock()
	if !h.closed {
		close(h.quit)
	}
	h.closed = true
	h.mu.Unlock()
	h.denyAllApprovals("the bot is shutting down") // a waiting turn must not hold shutdown
	done := make(chan struct{})
	go func() { h.workers.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		h.cancelAll()
		<-done
	}
	h.cancelAll()
}
