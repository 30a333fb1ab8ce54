// Package web is the chat channel of the web console: the operator, logged
// in to the console with the admin token, talks to a persona in the browser
// and the message takes the whole handler path (dedup, inbox, queue,
// persona, streaming, outbound) exactly as a Telegram or Slack message does.
// The package owns the adapter's side only: turning a posted line into a
// channels.Message (Post), keeping what the bot sent to each conversation
// (History), and fanning the bot's messages, edits, deltas and typing out to
// the console's live views (Subscribe). Pages, login and Server-Sent Events
// are internal/ui's job. It imports only channels and channels/markup of the
// project.
//
// Files: adapter.go (Adapter, Options, New, Run, Stop), inbound.go (Post),
// send.go (Format, Send, Edit, deltas, typing), fanout.go (Subscribe, History
// and their bounds).
//
// Design decisions:
//
//   - The user is the operator: every message is Direct and the channel is
//     never gated (channels.WebChannel is treated like the console by
//     channels.AccessPolicy). The sender id is the name the console gives
//     (Post's user), so the user key is "web:user:<name>".
//   - A conversation id is a chat id: the session key is "web:<conv>"
//     (channels.Target.String()). Ids are 1-64 characters of A-Z a-z 0-9 . _ -
//     so they are valid target addresses.
//   - Message ids are "<epoch>-<n>": the epoch (start time of the process in
//     base 36) keeps them unique across restarts, so the handler's persisted
//     dedup never drops a new message as a repeat.
//   - Text in events is what the model wrote (Markdown), untrusted: the
//     console must render it as text or through a sanitizer, never as HTML.
//     Format keeps the Markdown and splits it only at MaxChunk runes.
//   - The handler streams into Editor channels by sending a draft and
//     editing it, so a browser sees a turn as one "message" and a series of
//     "edit" events (at most one per EditInterval, default 150ms). The
//     DeltaWriter side ("delta", "reset") is implemented for callers that
//     stream raw text; the hub prefers Editor when both are there.
//   - Bounds: History keeps MaxHistory messages per conversation (edits are
//     folded into the message they change) for MaxConversations
//     conversations (the least recently active is forgotten first).
//     A subscriber's queue drops deltas when it holds QueueSize events (and
//     then every further delta until the next message, edit or reset, so a
//     view never shows text with a hole in it); messages, edits, resets and
//     typing are never dropped: a queued edit of a message is replaced by a
//     newer edit of it, and a subscriber whose queue still grows past
//     4×QueueSize is closed, which tells the view to reload History. A
//     typing change is folded only into a typing change queued last, so a
//     view never sees "off" before the drafts it ends.
//   - Drafts: a message or edit made while the conversation's typing
//     indicator is on (the hub keeps it on for the whole turn) is marked
//     Live, in its event and in History until the indicator goes off, so a
//     view can show the growing answer apart from the finished messages,
//     even when it connects in the middle of a turn (Typing, History).
//   - The operator's own messages are kept too (Posts, Kind "post", within
//     the same bounds), apart from the bot's (History): the stored turn shows
//     a message only once the turn is committed, and a console reloaded while
//     the turn still runs (waiting for /approve) must still show it.
//   - Stop ends every subscription (their channels close) and makes Post
//     refuse; it is idempotent. The daemon calls it at shutdown so open
//     Server-Sent Events streams end and the HTTP server can stop.
package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

// Name is the channel's address prefix.
const Name = channels.WebChannel

// Event kinds.
const (
	KindMessage = "message" // the bot sent a message: ID, full Text
	KindEdit    = "edit"    // the bot replaced the text of message ID with Text
	KindDelta   = "delta"   // streamed text to append (DeltaWriter)
	KindReset   = "reset"   // the streamed text so far was not the answer
	KindTyping  = "typing"  // Text "on" or "off"
	// KindPost is the operator's own message, as Posts keeps it (From,
	// Text, File); it is not published to subscribers.
	KindPost = "post"
)

// Typing event texts.
const (
	TypingOn  = "on"
	TypingOff = "off"
)

// Event is one thing the bot did in a conversation. Text is the model's
// Markdown: untrusted, never to be rendered as HTML.
type Event struct {
	Kind string
	ID   string
	Text string
	Time time.Time
	// Live marks a message or edit made while the conversation's typing
	// indicator is on: a draft of the turn still running. In History it is
	// cleared when the indicator goes off (the turn ended).
	Live bool
	// From is the sender's name of a KindPost (the operator); File the name
	// of the file a post carried ("" for text). Both are untrusted text.
	From string
	File string
}

// ErrStopped is returned by Post after Stop, and ErrNotRunning when the
// channel did not run within Options.StartWait.
var (
	ErrStopped    = errors.New("web: the channel is stopped")
	ErrNotRunning = errors.New("web: the channel is not running")
)

// Options configures an Adapter. Zero values take the defaults shown.
type Options struct {
	EditInterval     time.Duration // minimum time between two edits of a conversation; default 150ms
	MaxChunk         int           // longest message in runes; default 16000
	MaxHistory       int           // messages kept per conversation; default 200
	MaxConversations int           // conversations whose history is kept; default 64
	QueueSize        int           // a subscriber's queue before deltas are dropped; default 256
	StartWait        time.Duration // how long Post waits for Run to (re)start; default 5s
	Logger           *slog.Logger  // nil → discard
	Now              func() time.Time
}

func (o Options) withDefaults() Options {
	if o.EditInterval <= 0 {
		o.EditInterval = 150 * time.Millisecond
	}
	if o.MaxChunk <= 0 {
		o.MaxChunk = 16000
	}
	if o.MaxHistory <= 0 {
		o.MaxHistory = 200
	}
	if o.MaxConversations <= 0 {
		o.MaxConversations = 64
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 256
	}
	if o.StartWait <= 0 {
		o.StartWait = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Adapter is the web channel. It implements channels.Channel, Editor,
// DeltaWriter, Typer and Readiness.
type Adapter struct {
	opts  Options
	log   *slog.Logger
	epoch string

	seq     atomic.Int64
	running atomic.Bool

	mu      sync.Mutex
	sink    channels.Sink // set while Run is active
	up      chan struct{} // closed while Run is active; replaced when it ends
	stopped bool
	done    chan struct{}                       // closed by Stop
	convs   map[string]*conv                    // history per conversation
	subs    map[string]map[*subscriber]struct{} // live views per conversation
	typing  map[string]int                      // active typing indicators per conversation
	tick    int64                               // activity clock for conversation eviction
}

var (
	_ channels.Channel     = (*Adapter)(nil)
	_ channels.Editor      = (*Adapter)(nil)
	_ channels.DeltaWriter = (*Adapter)(nil)
	_ channels.Typer       = (*Adapter)(nil)
	_ channels.Readiness   = (*Adapter)(nil)
)

// New builds an Adapter; it starts nothing (Run does).
func New(o Options) *Adapter {
	o = o.withDefaults()
	return &Adapter{
		opts:   o,
		log:    o.Logger.With("channel", Name),
		epoch:  strconv.FormatInt(o.Now().UnixNano(), 36),
		convs:  map[string]*conv{},
		subs:   map[string]map[*subscriber]struct{}{},
		typing: map[string]int{},
		up:     make(chan struct{}),
		done:   make(chan struct{}),
	}
}

// Name is the channel's address prefix.
func (a *Adapter) Name() string { return Name }

// EditInterval is the minimum time between two edits of one conversation.
func (a *Adapter) EditInterval() time.Duration { return a.opts.EditInterval }

// Ready reports whether Run is active (Post works).
func (a *Adapter) Ready() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sink != nil
}

// Run takes posted messages to sink until ctx is canceled; it returns nil
// then. A second concurrent Run is an error.
func (a *Adapter) Run(ctx context.Context, sink channels.Sink) error {
	if sink == nil {
		return errors.New("web: Run needs a sink")
	}
	if !a.running.CompareAndSwap(false, true) {
		return errors.New("web: Run is already active")
	}
	defer a.running.Store(false)
	a.mu.Lock()
	a.sink = sink
	close(a.up)
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.sink, a.up = nil, make(chan struct{})
		a.mu.Unlock()
	}()
	<-ctx.Done()
	return nil
}

// currentSink returns the sink of the active Run, waiting up to StartWait
// for one (the daemon starts channels right after it starts serving, and a
// supervisor may be restarting the channel).
func (a *Adapter) currentSink(ctx context.Context) (channels.Sink, error) {
	timer := time.NewTimer(a.opts.StartWait)
	defer timer.Stop()
	for {
		a.mu.Lock()
		sink, up, stopped := a.sink, a.up, a.stopped
		a.mu.Unlock()
		switch {
		case stopped:
			return nil, ErrStopped
		case sink != nil:
			return sink, nil
		}
		select {
		case <-up:
		case <-a.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrNotRunning, ctx.Err())
		case <-timer.C:
			return nil, ErrNotRunning
		}
	}
}

// Stop ends every subscription and makes Post refuse from now on. It is
// idempotent.
func (a *Adapter) Stop() {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return
	}
	a.stopped = true
	close(a.done)
	var all []*subscriber
	for _, set := range a.subs {
		for s := range set {
			all = append(all, s)
		}
	}
	a.subs = map[string]map[*subscriber]struct{}{}
	a.mu.Unlock()
	for _, s := range all {
		s.close()
	}
}

// nextID returns a message id unique across restarts.
func (a *Adapter) nextID() string {
	return a.epoch + "-" + strconv.FormatInt(a.seq.Add(1), 10)
}
