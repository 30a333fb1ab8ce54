package channels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/memory"
)

// Store is what the handler needs from the durable store.
type Store interface {
	KV
	Outbox
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
	Resolve(ctx context.Context, target Target) string
	// Choose records a per-chat persona choice.
	Choose(ctx context.Context, target Target, name string) error
}

// Observer receives the handler's events (metrics). Methods must be fast
// and safe for concurrent use.
type Observer interface {
	MessageIn(channel string)
	MessageDropped(channel, reason string)
	TurnDone(channel string, res agent.Result, err error, d time.Duration)
}

type nopObserver struct{}

func (nopObserver) MessageIn(string)                                    {}
func (nopObserver) MessageDropped(string, string)                       {}
func (nopObserver) TurnDone(string, agent.Result, error, time.Duration) {}
func (nopObserver) ChunkSent(string)                                    {}
func (nopObserver) Delivery(string)                                     {}

// HeartbeatSwitch turns proactive greetings on and off at run time.
type HeartbeatSwitch interface {
	Enabled(ctx context.Context) bool
	SetEnabled(ctx context.Context, on bool) error
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
	Access AccessPolicy
	// MaxConcurrentTurns caps agent turns running at once (default 16).
	MaxConcurrentTurns int
	// MaxQueue caps messages waiting per session (default 1000).
	MaxQueue int
	Outbound *Outbound
	Personas Personas // optional
	// Status, if set, adds daemon facts (channels, model, jobs) to /status.
	Status func(ctx context.Context) string
	// Heartbeat switches proactive greetings for /heartbeat on|off (optional).
	Heartbeat HeartbeatSwitch
	// Reload re-reads the configuration for /reload (optional); who is the admin.
	Reload func(ctx context.Context, who string) (string, error)
	// Jobs describes the scheduled jobs for /jobs (optional).
	Jobs func(ctx context.Context) string
	// AlreadySent reports whether text already reached target during the turn
	// (the send_message tool); the final answer is then not sent twice.
	AlreadySent func(turnID, target, text string) bool
	// Formatting tells the model each platform's markup, by channel name.
	Formatting map[string]string
	BotName    string
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
}

// HandlerStats are counters since start.
type HandlerStats struct {
	Received, Duplicates, Ignored, Denied, Turns, TurnErrors, Commands uint64
	QueueDepth, ActiveSessions                                         int
}

// Handler is the one place every platform's messages go through: filtering,
// persisted dedup, access control, the durable inbox, commands, per-session
// FIFO order with a global concurrency cap, the agent turn with streaming, and
// delivery through the shared outbound path.
type Handler struct {
	store    Store
	agent    Agent
	out      *Outbound
	personas Personas
	status   func(context.Context) string
	hb       HeartbeatSwitch
	jobs     func(context.Context) string
	reload   func(context.Context, string) (string, error)
	sentBy   func(turnID, target, text string) bool
	format   map[string]string
	botName  string
	log      *slog.Logger
	now      func() time.Time
	maxQueue int
	obs      Observer
	pairing  *Pairing
	access   atomic.Pointer[AccessPolicy]
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

	mu       sync.Mutex
	chans    map[string]Channel
	sessions map[string]*session
	closed   bool

	received, duplicates, ignored, denied, turns, turnErrors, commands atomic.Uint64
}

type item struct {
	id       uint64
	msg      Message
	decision Decision
	answered bool // replay: the turn is committed, only delivery is left
	answer   string
	turnID   string
}

type session struct {
	key     string
	queue   []item
	running bool
	cancel  context.CancelFunc
	stopped bool // the running turn was canceled by /stop
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
		o.MaxConcurrentTurns = 16
	}
	if o.MaxQueue <= 0 {
		o.MaxQueue = 1000
	}
	if o.Outbound == nil {
		o.Outbound = NewOutbound(o.Store, OutboundOptions{Logger: o.Logger})
	}
	if o.BotName == "" {
		o.BotName = "Switchboard"
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	if o.StorageRetryBase <= 0 {
		o.StorageRetryBase = DefaultStorageRetryBase
	}
	if o.StorageRetryMax <= 0 {
		o.StorageRetryMax = DefaultStorageRetryMax
	}
	o.StorageRetryMax = max(o.StorageRetryMax, o.StorageRetryBase)
	ctx, cancel := context.WithCancel(context.Background())
	h := &Handler{store: o.Store, agent: o.Agent, out: o.Outbound, personas: o.Personas, status: o.Status,
		hb: o.Heartbeat, jobs: o.Jobs, reload: o.Reload, sentBy: o.AlreadySent, format: o.Formatting, botName: o.BotName, log: o.Logger, now: o.Now, maxQueue: o.MaxQueue, obs: o.Observer,
		pairing: NewPairing(o.Store, o.Now), sem: make(chan struct{}, o.MaxConcurrentTurns),
		baseCtx: ctx, cancelAll: cancel, chans: map[string]Channel{}, sessions: map[string]*session{},
		retryBase: o.StorageRetryBase, retryMax: o.StorageRetryMax, quit: make(chan struct{})}
	pol := o.Access
	h.access.Store(&pol)
	h.caps.set(o.MaxMessageChars, o.MaxTurnChars)
	return h
}

// Register makes ch available for delivery.
func (h *Handler) Register(ch Channel) {
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
func (h *Handler) Channel(name string) (Channel, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.chans[name]
	return ch, ok
}

// SetAccess replaces the access policy (config reload).
func (h *Handler) SetAccess(p AccessPolicy) { h.access.Store(&p) }

// Access returns the current access policy.
func (h *Handler) Access() AccessPolicy { return *h.access.Load() }

// Pairing returns the pairing registry.
func (h *Handler) Pairing() *Pairing { return h.pairing }

// Outbound returns the delivery path.
func (h *Handler) Outbound() *Outbound { return h.out }

// Handle implements Sink: it filters, deduplicates, checks access, persists
// the message in the inbox and queues it. It never runs a turn inline.
func (h *Handler) Handle(ctx context.Context, msg Message) error {
	h.received.Add(1)
	h.obs.MessageIn(msg.Channel)
	d, err := h.decide(ctx, msg)
	if err != nil {
		return err
	}
	switch d {
	case Ignore:
		h.ignored.Add(1)
		h.obs.MessageDropped(msg.Channel, "ignored")
		return nil
	case Deny:
		h.denied.Add(1)
		h.obs.MessageDropped(msg.Channel, "denied")
		h.log.Info("message from a user who is not allowed", "channel", msg.Channel, "user", msg.UserKey())
		return nil
	}
	key := msg.Target().String()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	if s := h.sessions[key]; s != nil && len(s.queue) >= h.maxQueue {
		h.mu.Unlock()
		h.obs.MessageDropped(msg.Channel, "busy")
		return ErrBusy
	}
	h.mu.Unlock()

	msg, cut := h.caps.capMessage(msg) // before the inbox: nothing longer is ever stored
	if cut {
		h.log.Info("incoming message cut to agent.max_message_chars", "channel", msg.Channel, "user", msg.UserKey())
	}
	payload, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	id, dup, err := h.store.Accept(ctx, memory.InboxItem{Channel: msg.Channel, MessageID: msg.MessageID,
		SessionKey: key, Payload: payload, Received: h.now()})
	h.noteWrite(opAccept, err)
	if err != nil {
		return fmt.Errorf("persist message: %w", err)
	}
	if dup {
		h.duplicates.Add(1)
		h.obs.MessageDropped(msg.Channel, "duplicate")
		return nil
	}
	it := item{id: id, msg: msg, decision: d}
	if d == Allow && commandName(msg.Text) == "stop" {
		h.stopSession(key)
	}
	h.enqueue(key, it)
	return nil
}

// decide applies the current access policy and pairing approvals to msg.
func (h *Handler) decide(ctx context.Context, msg Message) (Decision, error) {
	pol := h.Access()
	d := pol.Decide(msg, false)
	if d == NeedsPairing || (d == Deny && pol.Mode == AccessPairing) {
		ok, err := h.pairing.IsApproved(ctx, msg.UserKey())
		if err != nil {
			return d, err
		}
		if ok {
			d = pol.Decide(msg, true)
		}
	}
	return d, nil
}

// Replay queues the inbox items left unfinished by a previous run: committed
// turns are only delivered, the others run again. Every item is decided again
// under the current access policy and pairing approvals, exactly like a new
// message: items now ignored or denied (a user removed from allow_from) are
// cleared without a turn or a delivery; an unpaired stranger's item only gets
// its pairing code, and only once. It returns how many items were queued.
// Call it once at start, after registering channels.
func (h *Handler) Replay(ctx context.Context) (int, error) {
	items, err := h.store.InboxPending(ctx)
	if err != nil {
		return 0, fmt.Errorf("read inbox: %w", err)
	}
	var drop []uint64
	queued := 0
	for _, in := range items {
		var msg Message
		if err := json.Unmarshal(in.Payload, &msg); err != nil {
			h.log.Error("dropping unreadable inbox item", "id", in.ID, "err", err)
			drop = append(drop, in.ID)
			continue
		}
		d, err := h.decide(ctx, msg)
		if err != nil {
			h.log.Error("not replaying an inbox item now: cannot check its sender's access; it stays for the next start",
				"id", in.ID, "err", err)
			continue
		}
		switch d {
		case Ignore, Deny:
			reason := "ignored"
			if d == Deny {
				h.denied.Add(1)
				reason = "denied"
			} else {
				h.ignored.Add(1)
			}
			h.obs.MessageDropped(msg.Channel, reason)
			h.log.Info("not replaying a message the access policy no longer allows", "id", in.ID,
				"channel", msg.Channel, "user", msg.UserKey(), "decision", d.String())
			drop = append(drop, in.ID)
			continue
		}
		it := item{id: in.ID, msg: msg, decision: d}
		if in.State == memory.InboxAnswered && d == Allow {
			it.answered, it.answer, it.turnID = true, in.Answer, in.TurnID
		}
		h.enqueue(in.SessionKey, it)
		queued++
	}
	if len(drop) > 0 {
		err := h.store.InboxDone(ctx, drop...)
		h.noteWrite(opClear, err)
		if err != nil {
			h.log.Error("clear dropped inbox items; they are checked again at the next start", "err", err)
		}
	}
	if queued > 0 {
		h.log.Info("replaying unfinished messages from the inbox", "count", queued)
	}
	return queued, nil
}

func (h *Handler) enqueue(key string, it item) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[key]
	if s == nil {
		s = &session{key: key}
		h.sessions[key] = s
	}
	s.queue = append(s.queue, it)
	if !s.running {
		s.running = true
		h.workers.Add(1)
		go h.work(s)
	}
}

// work drains one session's queue, one turn at a time; it exits when the
// queue is empty.
func (h *Handler) work(s *session) {
	defer h.workers.Done()
	for {
		h.mu.Lock()
		if len(s.queue) == 0 {
			s.running = false
			delete(h.sessions, s.key)
			h.mu.Unlock()
			return
		}
		batch := takeBatch(&s.queue)
		h.mu.Unlock()
		h.process(s, batch)
	}
}

// takeBatch removes the next unit of work: a replayed answer, a command, a
// pairing request, or every consecutive chat message (mid-turn messages join
// the next turn together).
func takeBatch(q *[]item) []item {
	first := (*q)[0]
	if first.answered || first.decision != Allow || commandName(first.msg.Text) != "" {
		*q = (*q)[1:]
		return []item{first}
	}
	n := 1
	for n < len(*q) {
		it := (*q)[n]
		if it.answered || it.decision != Allow || commandName(it.msg.Text) != "" {
			break
		}
		n++
	}
	batch := append([]item(nil), (*q)[:n]...)
	*q = (*q)[n:]
	return batch
}

func (h *Handler) process(s *session, batch []item) {
	first := batch[0]
	switch {
	case first.answered:
		h.deliverAndFinish(first.msg, first.turnID, first.answer, batch)
	case first.decision == NeedsPairing:
		h.pair(s, first)
	case commandName(first.msg.Text) != "":
		h.commands.Add(1)
		h.command(s, first)
	default:
		h.runTurn(s, batch)
	}
}

// runTurn runs the agent for a batch of chat messages of one session.
func (h *Handler) runTurn(s *session, batch []item) {
	last := batch[len(batch)-1].msg
	target := last.Target()
	turnID := "in-" + strconv.FormatUint(batch[0].id, 10)
	ch, ok := h.Channel(last.Channel)
	if !ok {
		h.log.Error("no channel to answer on", "channel", last.Channel)
		h.done(batch)
		return
	}
	ctx, cancel := context.WithCancel(h.baseCtx)
	defer cancel()
	h.mu.Lock()
	s.cancel, s.stopped = cancel, false
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		s.cancel = nil
		h.mu.Unlock()
	}()

	var (
		res   agent.Result
		err   error
		delay = h.retryBase
	)
	for {
		select {
		case h.sem <- struct{}{}:
		case <-ctx.Done():
			h.finishCanceled(s, batch, last, turnID)
			return
		}
		started := time.Now()
		res, err = h.turn(ctx, ch, target, turnID, batch)
		<-h.sem
		h.turns.Add(1)
		h.obs.TurnDone(last.Channel, res, err, time.Since(started))
		h.auditTools(last, res)
		if ctx.Err() != nil || !IsStorageError(err) {
			if err == nil {
				h.storageOK(opCommit) // the turn was committed
			}
			break
		}
		// The turn could not be committed (disk full): nothing of it is on
		// record and the inbox items stay pending. Commit its result once the
		// store writes again (or, if that cannot be done, run it again);
		// /stop and Close end the wait.
		h.storageFailed(opCommit, err)
		if h.recommit(ctx, target.String(), turnID, batch, res) {
			if res.FinishReason != agent.FinishAPIError {
				err = nil
			}
			break
		}
		if !h.awaitStorage(ctx, &delay) {
			if ctx.Err() != nil {
				h.finishCanceled(s, batch, last, turnID)
				return
			}
			h.log.Info("shutting down while the store cannot write; the message stays in the inbox for the next start", "turn", turnID)
			return
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			h.finishCanceled(s, batch, last, turnID)
			return
		}
		h.turnErrors.Add(1)
		h.log.Error("turn failed", "turn", turnID, "session", target.String(), "err", err)
		h.deliverAndFinish(last, turnID, h.caps.withTruncationNote(batch, agent.FriendlyError(err)), batch)
		return
	}
	answer := res.Text
	if strings.TrimSpace(answer) == "" {
		answer = "(I have no answer to that.)"
	}
	if h.sentBy != nil && h.sentBy(turnID, target.String(), answer) {
		h.done(batch) // send_message already delivered this very text here
		return
	}
	h.deliverAndFinish(last, turnID, h.caps.withTruncationNote(batch, answer), batch)
}

// turn runs the agent with typing and streaming around it; both always stop
// when the turn ends.
func (h *Handler) turn(ctx context.Context, ch Channel, target Target, turnID string, batch []item) (agent.Result, error) {
	last := batch[len(batch)-1].msg
	if t, ok := ch.(Typer); ok {
		stop := t.StartTyping(ctx, target)
		defer stop()
	}
	var st *streamer
	dw, _ := ch.(DeltaWriter)
	if ed, ok := ch.(Editor); ok {
		st = startStreamer(ctx, h.out, ch, ed, Delivery{Target: target, ReplyTo: replyTo(last), TurnID: turnID})
		defer st.Stop()
	}
	req := agent.Request{
		SessionKey: target.String(),
		Text:       h.caps.turnText(batch),
		Media:      batchMedia(batch),
		Runtime:    h.runtime(last),
		Sources:    ids(batch),
		TurnID:     turnID,
		OnEvent: func(ev agent.Event) {
			switch {
			case ev.Kind == agent.EventTextDelta && st != nil:
				st.Append(ev.Text)
			case ev.Kind == agent.EventReset && st != nil:
				st.Reset()
			case ev.Kind == agent.EventTextDelta && dw != nil:
				dw.WriteDelta(target, ev.Text)
			case ev.Kind == agent.EventReset && dw != nil:
				dw.ResetDelta(target)
			}
		},
	}
	if h.personas != nil {
		req.Persona = h.personas.Resolve(ctx, target)
	}
	res, err := h.agent.ProcessMessage(ctx, req)
	if st != nil {
		st.Stop() // no draft edit may land after the final delivery starts
	}
	return res, err
}

func (h *Handler) finishCanceled(s *session, batch []item, last Message, turnID string) {
	h.mu.Lock()
	stopped := s.stopped
	h.mu.Unlock()
	if stopped {
		// /stop: the user does not want these answered; the /stop command
		// itself replies.
		h.done(batch)
		return
	}
	if h.operatorCancel.Load() {
		h.finishOperatorCanceled(batch, last, turnID)
		return
	}
	// Shutdown: leave the inbox items pending so the next start replays them.
	h.log.Info("turn interrupted by shutdown; it will run again at start", "turn", turnID)
}

// deliverAndFinish delivers text as the answer to the batch and clears the
// inbox items. A delivery that fails for good on the platform is logged and
// the items are still cleared, so one unreachable chat cannot make every
// start replay it. A delivery that fails because the store cannot write (the
// outbox) is retried with backoff; the items stay pending until it succeeds
// (or, at shutdown, for the next start).
func (h *Handler) deliverAndFinish(last Message, turnID, text string, batch []item) {
	ctx := h.baseCtx
	if h.closing() {
		ctx = context.Background()
	}
	ch, ok := h.Channel(last.Channel)
	if ok {
		d := Delivery{Target: last.Target(), ReplyTo: replyTo(last), TurnID: turnID, Markdown: text}
		deliver := func(ctx context.Context) error {
			_, err := h.out.Deliver(ctx, ch, d)
			return err
		}
		err := h.storageRetry(ctx, opDeliver, deliver)
		if moved, ok := movedTo(err); ok {
			h.moveSession(last.Target(), moved)
			d = Delivery{Target: moved, TurnID: turnID, Markdown: text}
			err = h.storageRetry(ctx, opDeliver, deliver)
		}
		if err != nil {
			if IsStorageError(err) {
				h.log.Info("shutting down while the store cannot write; the answer is delivered at the next start", "turn", turnID)
				return
			}
			h.log.Error("delivery failed", "turn", turnID, "target", last.Target().String(), "err", err)
			if ctx.Err() != nil {
				return // shutting down mid-delivery: replay finishes it
			}
		}
	}
	h.done(batch)
}

// movedTo reports the new address of a chat that moved (a Telegram group
// upgraded to a supergroup), from an adapter error with a MovedTo method.
func movedTo(err error) (Target, bool) {
	var mv interface{ MovedTo() Target }
	if err == nil || !errors.As(err, &mv) {
		return Target{}, false
	}
	return mv.MovedTo(), true
}

// SessionMover is implemented by stores that can rename a session.
type SessionMover interface {
	MoveSession(ctx context.Context, from, to string) error
}

// moveSession carries a chat's session (history, notes, archives) to its new address.
func (h *Handler) moveSession(from, to Target) {
	h.log.Info("chat moved; its session follows", "from", from.String(), "to", to.String())
	mv, ok := h.store.(SessionMover)
	if !ok {
		return
	}
	if err := mv.MoveSession(context.WithoutCancel(h.baseCtx), from.String(), to.String()); err != nil {
		h.log.Error("move session", "from", from.String(), "to", to.String(), "err", err)
		return
	}
	h.audit("system", "session.move", to.String(), "moved from "+from.String(), "")
}

// reply answers a command or pairing message.
func (h *Handler) reply(it item, text string) {
	h.deliverAndFinish(it.msg, "in-"+strconv.FormatUint(it.id, 10), text, []item{it})
}

// done clears the batch's inbox items, retrying while the store cannot write.
func (h *Handler) done(batch []item) {
	err := h.storageRetry(context.WithoutCancel(h.baseCtx), opClear, func(ctx context.Context) error {
		return h.store.InboxDone(ctx, ids(batch)...)
	})
	if err != nil {
		h.log.Error("clear inbox", "err", err)
	}
}

func (h *Handler) pair(s *session, it item) {
	// The sender may have been approved while this message waited in the
	// queue: then it is an ordinary message, and no new code is issued.
	if ok, err := h.pairing.IsApproved(h.baseCtx, it.msg.UserKey()); err == nil && ok {
		it.decision = Allow
		h.runTurn(s, []item{it})
		return
	}
	var (
		req     PairingRequest
		created bool
	)
	err := h.storageRetry(h.baseCtx, opPairing, func(ctx context.Context) error {
		var err error
		req, created, err = h.pairing.RequestFrom(ctx, it.msg, it.id)
		return err
	})
	switch {
	case errors.Is(err, ErrPairingFull):
		h.log.Warn("pairing request refused: too many pending codes", "channel", it.msg.Channel, "user", it.msg.UserKey())
		if h.pairing.ShouldTellRefused(it.msg.UserKey()) {
			h.reply(it, pairingRefusedText)
			return
		}
		h.done([]item{it}) // told recently, or too many refusals sent: stay quiet
		return
	case IsStorageError(err):
		return // shutting down: the item stays for the next start
	case err != nil:
		h.log.Error("pairing request", "err", err)
		h.done([]item{it})
		return
	case !created && req.Source != it.id:
		h.done([]item{it}) // another message already got the code; stay quiet
		return
	}
	// created, or this very item asked for the code before a restart and its
	// reply may not have gone out: the outbox (keyed by the item) sends it
	// once, and skips it if it was delivered.
	if created {
		h.audit(it.msg.UserKey(), "pairing.request", it.msg.Target().String(), "code issued", "")
		h.log.Info("pairing code issued", "user", it.msg.UserKey(), "name", it.msg.Sender.Name, "code", req.Code)
	}
	h.reply(it, fmt.Sprintf("Hi! I don't know you yet. Ask the operator of %s to approve this pairing code (valid for 1 hour):\n\n`%s`\n\n(switchboard pairing approve %s)", h.botName, req.Code, req.Code))
}

// stopSession cancels the running turn of key and drops its queued chat messages.
func (h *Handler) stopSession(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[key]
	if s == nil {
		return
	}
	if s.cancel != nil {
		s.stopped = true
		s.cancel()
	}
	var dropped []item
	kept := s.queue[:0]
	for _, it := range s.queue {
		if it.decision == Allow && !it.answered && commandName(it.msg.Text) == "" {
			dropped = append(dropped, it)
			continue
		}
		kept = append(kept, it)
	}
	s.queue = kept
	if len(dropped) > 0 {
		h.workers.Add(1) // Close waits for it like for a session worker
		go func() {
			defer h.workers.Done()
			h.done(dropped)
		}()
	}
}

func (h *Handler) runtime(m Message) agent.Runtime {
	ct := "group"
	switch {
	case m.Direct:
		ct = "direct"
	case m.ThreadID != "":
		ct = "thread"
	}
	return agent.Runtime{Channel: m.Channel, ChatType: ct, SenderName: m.Sender.Name, Formatting: h.format[m.Channel]}
}

func (h *Handler) audit(actor, action, sess, detail, errText string) {
	err := h.store.Audit(context.WithoutCancel(h.baseCtx), memory.AuditRecord{Time: h.now(), Actor: actor,
		Action: action, Session: sess, Detail: detail, Error: errText})
	if err != nil {
		h.log.Error("audit", "err", err)
	}
}

// auditTools records every tool call of a turn in the audit log.
func (h *Handler) auditTools(m Message, res agent.Result) {
	for _, e := range res.Trace {
		if e.Kind != agent.TraceTool {
			continue
		}
		h.audit(m.UserKey(), "tool."+e.Tool, m.Target().String(), e.Args, e.Error)
	}
}

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
		Commands: h.commands.Load(), QueueDepth: depth, ActiveSessions: active}
}

// Busy reports whether key has a turn running or queued (the heartbeat skips busy sessions).
func (h *Handler) Busy(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.sessions[key]
	return ok
}

// Deliver sends text to target through the shared outbound path (heartbeat,
// jobs, send_message). turnID keys the outbox record ("" = not recorded).
func (h *Handler) Deliver(ctx context.Context, target Target, turnID, text string) ([]string, error) {
	ch, ok := h.Channel(target.Channel)
	if !ok {
		return nil, fmt.Errorf("deliver to %s: channel %q is not running", target, target.Channel)
	}
	return h.out.Deliver(ctx, ch, Delivery{Target: target, TurnID: turnID, Markdown: text})
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

func batchText(batch []item) string {
	if len(batch) == 1 {
		return withQuote(batch[0].msg)
	}
	var b strings.Builder
	for i, it := range batch {
		if i > 0 {
			b.WriteString("\n\n")
		}
		if !it.msg.Direct && it.msg.Sender.Name != "" {
			b.WriteString(it.msg.Sender.Name + ": ")
		}
		b.WriteString(withQuote(it.msg))
	}
	return b.String()
}

// withQuote puts the replied-to message, wrapped as untrusted content, in
// front of the text: it may be another person's words, never instructions.
func withQuote(m Message) string {
	if m.Quote == nil {
		return m.Text
	}
	author := m.Quote.Author
	if m.Quote.FromBot {
		author = "you (the assistant)"
	}
	return agent.QuoteUntrusted(author, m.Quote.Text) + "\n" + m.Text
}

func batchMedia(batch []item) []agent.Media {
	var out []agent.Media
	for _, it := range batch {
		for _, m := range it.msg.Media {
			out = append(out, agent.Media{MIME: m.MIME, Name: m.Name, Data: m.Data})
		}
	}
	return out
}

func ids(batch []item) []uint64 {
	out := make([]uint64, len(batch))
	for i, it := range batch {
		out[i] = it.id
	}
	return out
}

func replyTo(m Message) string {
	if m.Direct {
		return ""
	}
	return m.MessageID
}
