// Package telegram is Switchboard's Telegram adapter, built on
// github.com/go-telegram/bot. It owns the connection to the Bot API (long
// polling or webhook), the normalization of updates into channels.Message and
// the delivery primitives (Send, Edit, typing). Everything that must behave the
// same on every platform — dedup, access control, group gating, commands,
// retries, the outbox — is the shared handler's job (channels/hub), not this
// package's. It imports only channels, channels/markup and the leaf internal/redact of the project.
//
// Files: adapter.go (Adapter, Options and their defaults and validation, New,
// Run), inbound.go (update → channels.Message, media download), send.go
// (Format, Send, Edit, typing, pacing, error classification), poll.go
// (getUpdates long polling), webhook.go (webhook mode), jsoncall.go (the calls
// every answer makes, posted as JSON).
//
// Design decisions:
//
//   - Acknowledge after persist. go-telegram/bot's own poller (Bot.Start)
//     stores the offset of every update it fetched before the handler runs
//     (get_updates.go: atomic.StoreInt64(&b.lastUpdateID, upd.ID) and the next
//     getUpdates call carries lastUpdateID+1), so an update whose handling
//     failed would be confirmed anyway, and the library exports no raw method
//     call. This package therefore drives getUpdates itself (same endpoint,
//     same envelope); the calls every answer makes (sendMessage,
//     sendMessageDraft, sendChatAction, editMessageText) are posted as JSON
//     by jsoncall.go, with the library's error values, because the library's
//     multipart encoding cost more CPU than the rest of the Telegram path;
//     the library serves every other method. Updates are decoded into this
//     package's own types (update.go), the fields the adapter reads: the
//     library's models.Update drags the whole Bot API into encoding/json's
//     caches, and refuses whole updates over fields the adapter never reads
//     (an unknown forward origin type lost the message). The offset
//     moves past an update only after sink.Handle returned nil for it. When Handle fails,
//     the offset stays at it, and after a short backoff getUpdates is called
//     again with that offset, so Telegram delivers the failed update (and
//     what followed it) again. Different chats' updates of a batch go to the
//     sink concurrently (Options.IntakeWorkers), so their inbox writes share
//     a commit; one chat's stay in order, and a chat stops at its first
//     refused update. The offset is not persisted: Telegram keeps unconfirmed
//     updates for 24 h and the handler's persisted dedup drops repeats.
//   - Webhook mode uses this package's own http.Handler instead of the
//     library's WebhookHandler, which answers 200 even for a wrong secret and
//     queues updates before they are handled. Here a wrong or missing
//     X-Telegram-Bot-Api-Secret-Token answers 401 without processing, the
//     update is handled synchronously and the request answers 200 only after
//     sink.Handle returned nil (500 otherwise, so Telegram redelivers).
//     Webhook mode requires a secret. In polling mode WebhookPattern returns
//     "": there is nothing to mount.
//   - Message ids. Telegram message ids are unique per chat only, so
//     Message.MessageID is "<chat_id>:<message_id>"; Send returns ids in the same
//     form and Edit / Outgoing.ReplyTo accept both that form and a bare
//     message id.
//   - Edited messages are ignored (debug log): the original was answered
//     already and re-running a turn for a typo fix would surprise users.
//     Channel posts, callback queries and service messages are ignored too.
//   - A `/command@otherbot` is ignored (addressed to another bot);
//     `/command@thisbot` becomes `/command` and counts as a mention.
//   - Messages sent on behalf of a chat (anonymous group admins, linked
//     channels) carry that chat as Sender.
//   - Media: photos (largest size under MaxMediaBytes), voice notes
//     (OGG/Opus), audio files and documents of any type are downloaded
//     through getFile, each bounded by MaxMediaBytes before the download (the
//     announced file_size) and while reading it. An attachment that cannot be
//     used (too large, a failed download) is dropped with a warning instead
//     of failing the message (a permanent failure would otherwise block the
//     chat's update queue), and a bracketed note in Text tells the user why.
//     What an attachment becomes for the model (a transcript, a document's
//     text) is agent/media's business, not the adapter's.
//   - Group→supergroup migration surfaces from Send/Edit/typing as a
//     permanent error wrapping *MigratedError, whose MovedTo() is the new
//     target; the handler can move the session there (errors.As on
//     interface{ MovedTo() channels.Target }).
//   - Streaming. In private chats an answer being written is shown with
//     sendMessageDraft (Bot API 9.3+), an ephemeral preview that never
//     becomes a message, and the answer is persisted with one sendMessage at
//     the end (channels.Previewer): a crash mid-answer leaves no fragment,
//     and the only window in which a crash can double a message is that
//     sendMessage's round trip (Bot API has no idempotency key). A server
//     that answers 404 to sendMessageDraft (an older local Bot API server)
//     is remembered for the process: from then on private chats stream by
//     editMessageText like groups, where the window is a draft's first send.
//   - Pacing: sends wait on a per-chat limiter (default 1/s) and a global one
//     (default 30/s); edits wait on the global one only (the handler already
//     throttles them per chat with EditInterval). Telegram's stricter 20/min
//     for groups is left to 429 handling (retry_after) in the handler. The
//     daemon sets the rates and bursts from channels.telegram.rate (0 there
//     means rate.Inf: unpaced), for a paid-broadcast bot or a test server.
package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"golang.org/x/time/rate"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/redact"
)

// Name is the channel's address prefix.
const Name = "telegram"

// IdleConns is how many idle connections to the Bot API the default client
// keeps for reuse (Go's default is 2).
const IdleConns = 64

// Mode values for Options.Mode.
const (
	ModePolling = "polling"
	ModeWebhook = "webhook"
)

// WebhookPath is where the daemon mounts the webhook handler.
const WebhookPath = "/webhooks/telegram"

// Command is one entry of the bot's command menu (setMyCommands).
type Command struct {
	Name        string // without the slash, lowercase
	Description string
}

// DefaultCommands returns the commands registered when Options.Commands is nil.
func DefaultCommands() []Command {
	return []Command{
		{"help", "Show what I can do"},
		{"reset", "Start a fresh conversation"},
		{"stop", "Stop the current answer"},
		{"status", "Show session status"},
		{"persona", "Show or switch the persona"},
	}
}

// Options configures an Adapter. Zero values take the defaults shown.
type Options struct {
	Token         string // bot token; required; never logged
	APIURL        string // Bot API server root; default https://api.telegram.org
	Mode          string // ModePolling (default) or ModeWebhook
	WebhookURL    string // public URL Telegram posts to (webhook mode)
	WebhookSecret string // X-Telegram-Bot-Api-Secret-Token (webhook mode; required there)

	EditInterval   time.Duration // minimum time between edits of a chat; default 1s
	MaxMediaBytes  int64         // largest attachment downloaded; default 10 MiB; <0 disables media
	PollTimeout    time.Duration // getUpdates long-poll timeout, whole seconds, min 1s; default 50s
	RequestTimeout time.Duration // per API call (other than getUpdates); default 30s
	RetryMin       time.Duration // first backoff after a failed poll or Handle; default 500ms
	RetryMax       time.Duration // longest backoff; default 30s
	TypingInterval time.Duration // sendChatAction refresh; default 4s (Telegram shows it 5s)
	// TypingDelay is how long a turn runs before "typing…" is first shown;
	// default DefaultTypingDelay, negative shows it at once.
	TypingDelay time.Duration
	// After is the clock of TypingDelay (tests fire it by hand); default
	// time.After.
	After func(time.Duration) <-chan time.Time
	// IntakeWorkers bounds how many chats of one getUpdates batch are handed
	// to the sink at once (one chat's updates always go in order); default 16.
	IntakeWorkers int

	// Send pacing. Zero takes the default; rate.Inf disables a limiter.
	PerChatRate  rate.Limit // default 1 message/s per chat
	PerChatBurst int        // default 1
	GlobalRate   rate.Limit // default 30 messages/s overall
	GlobalBurst  int        // default 30

	Commands []Command // nil → DefaultCommands(); empty non-nil → none registered

	// HTTPClient defaults to a client without overall timeout (calls use
	// contexts) that keeps IdleConns idle connections to the Bot API.
	HTTPClient *http.Client
	Logger     *slog.Logger // nil → discard
	Now        func() time.Time
}

// String describes the options without secrets.
func (o Options) String() string {
	return fmt.Sprintf("telegram.Options{APIURL:%q Mode:%q WebhookURL:%q Token:%s WebhookSecret:%s}",
		redact.URL(o.APIURL), o.Mode, redact.URL(o.WebhookURL), masked(o.Token), masked(o.WebhookSecret))
}

// LogValue keeps the token and webhook secret out of structured logs.
func (o Options) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("api_url", redact.URL(o.APIURL)), slog.String("mode", o.Mode),
		slog.String("webhook_url", redact.URL(o.WebhookURL)),
		slog.String("token", masked(o.Token)), slog.String("webhook_secret", masked(o.WebhookSecret)),
	)
}

func masked(s string) string {
	if s == "" {
		return `""`
	}
	return "[redacted]"
}

// Adapter is the Telegram adapter. It implements channels.Channel, Typer,
// Editor, Readiness, Webhook, Pacer, DirectTeller and Previewer.
type Adapter struct {
	opts   Options
	token  string
	apiURL string
	bot    *bot.Bot
	client *http.Client
	log    *slog.Logger
	now    func() time.Time

	global     *rate.Limiter
	limitersMu sync.Mutex
	limiters   map[string]*rate.Limiter

	me      atomic.Pointer[models.User]
	sink    atomic.Pointer[sinkBox]
	running atomic.Bool
	ready   atomic.Bool
	lastOK  atomic.Int64 // unix nanos of the last successful getUpdates

	// noPreviews is set once the server answered sendMessageDraft with
	// 404 (an older local Bot API server): private chats stream by edits
	// for the rest of the process.
	noPreviews atomic.Bool

	webhookMu sync.Mutex // serializes webhook deliveries into the sink
}

type sinkBox struct{ channels.Sink }

var (
	_ channels.Channel      = (*Adapter)(nil)
	_ channels.Typer        = (*Adapter)(nil)
	_ channels.Editor       = (*Adapter)(nil)
	_ channels.Readiness    = (*Adapter)(nil)
	_ channels.Webhook      = (*Adapter)(nil)
	_ channels.Pacer        = (*Adapter)(nil)
	_ channels.DirectTeller = (*Adapter)(nil)
	_ channels.Previewer    = (*Adapter)(nil)
)

// New validates opts and builds an Adapter. It makes no network calls; Run
// calls getMe.
func New(opts Options) (*Adapter, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	log := opts.Logger
	log = log.With("channel", Name)

	c := &Adapter{
		opts:     opts,
		token:    opts.Token,
		apiURL:   opts.APIURL,
		client:   opts.HTTPClient,
		log:      log,
		now:      opts.Now,
		global:   rate.NewLimiter(opts.GlobalRate, opts.GlobalBurst),
		limiters: map[string]*rate.Limiter{},
	}
	b, err := bot.New(opts.Token,
		bot.WithServerURL(opts.APIURL),
		bot.WithSkipGetMe(),
		bot.WithHTTPClient(opts.PollTimeout, opts.HTTPClient),
		bot.WithErrorsHandler(func(err error) { log.Debug("library error", "err", c.redact(err)) }),
		bot.WithDefaultHandler(func(context.Context, *bot.Bot, *models.Update) {}),
	)
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", c.redact(err))
	}
	c.bot = b
	return c, nil
}

// validate reports the first problem with opts; empty fields that have a
// default are fine.
func (o Options) validate() error {
	if strings.TrimSpace(o.Token) == "" {
		return errors.New("telegram: token is required")
	}
	if strings.ContainsAny(o.Token, "/ \t\n?#") {
		return errors.New("telegram: token contains invalid characters")
	}
	if o.APIURL != "" && !httpURL(o.APIURL) {
		return fmt.Errorf("telegram: api_url %q must be an http(s) URL", o.APIURL)
	}
	switch o.Mode {
	case "", ModePolling:
	case ModeWebhook:
		if o.WebhookURL == "" {
			return errors.New("telegram: webhook mode needs webhook_url")
		}
		if !httpURL(o.WebhookURL) {
			return fmt.Errorf("telegram: webhook_url %q must be an http(s) URL", o.WebhookURL)
		}
		if !validSecret(o.WebhookSecret) {
			return errors.New("telegram: webhook mode needs webhook_secret: 1-256 characters A-Z, a-z, 0-9, _ or -")
		}
	default:
		return fmt.Errorf("telegram: unknown mode %q (want polling or webhook)", o.Mode)
	}
	return nil
}

// httpURL reports whether s is an absolute http(s) URL with a host.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// withDefaults fills the zero fields of validated options.
func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.APIURL == "" {
		o.APIURL = defaultServer
	}
	o.APIURL = strings.TrimRight(o.APIURL, "/")
	if o.Mode == "" {
		o.Mode = ModePolling
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.EditInterval, time.Second)
	def(&o.PollTimeout, 50*time.Second)
	o.PollTimeout = max(o.PollTimeout, time.Second)
	def(&o.RequestTimeout, 30*time.Second)
	def(&o.RetryMin, 500*time.Millisecond)
	def(&o.RetryMax, 30*time.Second)
	o.RetryMax = max(o.RetryMax, o.RetryMin)
	def(&o.TypingInterval, 4*time.Second)
	if o.TypingDelay == 0 {
		o.TypingDelay = DefaultTypingDelay
	}
	if o.After == nil {
		o.After = time.After
	}
	if o.IntakeWorkers <= 0 {
		o.IntakeWorkers = 16
	}
	if o.MaxMediaBytes == 0 {
		o.MaxMediaBytes = 10 << 20
	}
	if o.PerChatRate == 0 {
		o.PerChatRate = 1
	}
	if o.PerChatBurst <= 0 {
		o.PerChatBurst = 1
	}
	if o.GlobalRate == 0 {
		o.GlobalRate = 30
	}
	if o.GlobalBurst <= 0 {
		o.GlobalBurst = 30
	}
	if o.Commands == nil {
		o.Commands = DefaultCommands()
	}
	if o.HTTPClient == nil {
		// Go's default keeps two idle connections a host: with more chats
		// answered at once, the rest were closed after each call and dialed
		// again. Every call goes to the one Bot API host.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = IdleConns
		o.HTTPClient = &http.Client{Transport: tr}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Name is the channel's address prefix.
func (c *Adapter) Name() string { return Name }

// EditInterval is the minimum time between two edits of one chat.
func (c *Adapter) EditInterval() time.Duration { return c.opts.EditInterval }

// String never shows the token.
func (c *Adapter) String() string {
	return fmt.Sprintf("telegram(%s, %s)", c.opts.Mode, c.apiURL)
}

// Ready reports whether the channel is connected: in polling mode the last
// getUpdates succeeded and not longer ago than a poll should take; in webhook
// mode the webhook is set and Run is active.
func (c *Adapter) Ready() bool {
	if !c.running.Load() || !c.ready.Load() {
		return false
	}
	if c.opts.Mode == ModeWebhook {
		return true
	}
	last := c.lastOK.Load()
	return c.now().Sub(time.Unix(0, last)) <= c.opts.PollTimeout+c.opts.RequestTimeout
}

// Me is the bot's own user as getMe reported it (nil before Run fetched it).
func (c *Adapter) Me() *models.User { return c.me.Load() }

// redact removes the token from an error's text (URLs in transport errors
// carry it) while keeping the chain for errors.Is / errors.As.
func (c *Adapter) redact(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if !strings.Contains(msg, c.token) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(msg, c.token, "<token>"), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func validSecret(s string) bool {
	if len(s) == 0 || len(s) > 256 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// callCtx bounds one API call by RequestTimeout.
func (c *Adapter) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.opts.RequestTimeout)
}

// Run connects and pushes inbound messages into sink until ctx is canceled
// (nil) or the Bot API rejects the token or the webhook cannot be set (error;
// the supervisor restarts Run with backoff). It calls getMe, registers the
// command menu, then either deletes any webhook and long-polls, or sets the
// webhook and waits for deliveries to WebhookHandler.
func (c *Adapter) Run(ctx context.Context, sink channels.Sink) error {
	if sink == nil {
		return errors.New("telegram: Run needs a sink")
	}
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("telegram: Run is already active")
	}
	defer func() {
		c.ready.Store(false)
		c.sink.Store(nil)
		c.running.Store(false)
	}()

	cctx, cancel := c.callCtx(ctx)
	me, err := c.bot.GetMe(cctx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("telegram: getMe: %w", c.redact(err))
	}
	c.me.Store(me)
	c.log.Info("connected", "bot", me.Username, "mode", c.opts.Mode)
	c.registerCommands(ctx)

	if c.opts.Mode == ModeWebhook {
		return c.runWebhook(ctx, sink)
	}
	return c.runPolling(ctx, sink)
}

func (c *Adapter) registerCommands(ctx context.Context) {
	if len(c.opts.Commands) == 0 {
		return
	}
	cmds := make([]models.BotCommand, 0, len(c.opts.Commands))
	for _, cmd := range c.opts.Commands {
		cmds = append(cmds, models.BotCommand{Command: cmd.Name, Description: cmd.Description})
	}
	cctx, cancel := c.callCtx(ctx)
	defer cancel()
	if _, err := c.bot.SetMyCommands(cctx, &bot.SetMyCommandsParams{Commands: cmds}); err != nil {
		c.log.Warn("setMyCommands failed; the command menu may be stale", "err", c.redact(err))
	}
}
