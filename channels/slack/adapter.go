// Package slack is Switchboard's Slack adapter, built on slack-go/slack and its
// socketmode package. It owns the connection to Slack (Socket Mode over a
// WebSocket, or the Events API over HTTP), turning Slack events into
// channels.Message values for the shared handler, and delivering chunks with
// chat.postMessage / chat.update. Dedup, access control, group gating,
// commands, retries and streaming live in the shared handler (channels/hub),
// not here; the package imports only channels, channels/markup and
// channels/lanes of the project.
//
// Files: adapter.go (Adapter, Options and their defaults and validation, New,
// Run, auth.test), inbound.go (event → channels.Message, names, images,
// threads), send.go (Send, Edit, typing, Delivered, error classification),
// socket.go (Socket Mode connection and watchdog), intake.go (per-channel
// lanes that hand envelopes to the sink), webhook.go (Events API over HTTP,
// signature checks).
//
// Design decisions:
//
//   - Start: auth.test learns the bot's user id and bot id; invalid_auth and
//     missing_scope become clear, actionable errors that Run returns.
//   - Socket Mode: one socketmode.Client per connection lifetime. Each
//     envelope is acknowledged only after sink.Handle returned nil (the inbox
//     write); a Handle error leaves it unacked so Slack redelivers. socketmode
//     answers pings, honours "disconnect" and reconnects with backoff itself; on
//     top of that a watchdog restarts the client when a connection produced no
//     hello within HelloTimeout or no frame at all (pings included, observed on
//     the raw network connection) within WatchdogTimeout. The old client is fully
//     stopped (its RunContext returned, its socket closed) before a new one is
//     created, so two connections never process events side by side.
//   - Parallel intake: envelopes go to the lane of their Slack channel
//     (channels/lanes). One channel's envelopes are handled and acked one at
//     a time in arrival order; up to IntakeWorkers channels are handed to the
//     sink concurrently, so a slow Handle in one chat does not hold up the
//     others. Bounded (IntakeDepth per channel, IntakeMaxChats channels): an
//     envelope beyond the bounds, or still queued when its client stops, is
//     never acked, and Slack redelivers it.
//   - HTTP mode (channels.Webhook): the signature (v0 HMAC-SHA256 of
//     "v0:ts:body", 5-minute window, injectable clock) is checked before
//     anything else; 200 after Handle returned nil, 500 otherwise so Slack
//     retries; Handle calls are serialized per channel to keep its order.
//   - Ids: MessageID is "<channel>:<ts>" for both the `message` and the
//     `app_mention` event of one mention, so the handler's dedup keeps one
//     turn; a `message` event containing "<@BOT>" is marked Mentioned itself so
//     whichever event arrives first carries the right flags (and the same
//     ThreadID). Send returns the posted message's ts; Edit accepts a ts (or
//     "<channel>:<ts>").
//   - Threads: ThreadID is thread_ts for thread replies, and the message ts for
//     a top-level channel mention when ThreadReplies (default true), so the
//     answer goes into that thread. DMs stay flat. Outgoing.ReplyTo is ignored:
//     Slack has no reply-without-thread, and threading is decided by ThreadID
//     alone so a flat session never gets its answers scattered into threads.
//   - Typing: bots cannot send typing indicators through the Events API. In an
//     assistant thread (seen via assistant_thread_started) StartTyping sets the
//     thread status with assistant.threads.setStatus and stop clears it; in any
//     other chat StartTyping posts nothing and returns a no-op stop.
//   - Errors: *slack.RateLimitedError → RateLimited(RetryAfter); auth, channel
//     and argument errors → Permanent; a transport failure after the request was
//     written (tracked with httptrace), or Slack's internal_error/fatal_error/5xx
//     on a post → Ambiguous (the message may exist); other failures → Temporary.
//   - Secrets: tokens and the signing secret never appear in logs, errors or
//     String(); slack-go's debug logging stays off.
package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/lanes"
)

// Modes.
const (
	ModeSocket = "socket"
	ModeHTTP   = "http"
)

// Name is the channel's address prefix.
const Name = "slack"

// Options configures the adapter. The daemon fills it from config; tokens are
// plain strings here and are never logged.
type Options struct {
	BotToken      string // xoxb-…
	AppToken      string // xapp-…, Socket Mode only
	Mode          string // "socket" (default) or "http"
	SigningSecret string // HTTP mode only
	// APIURL is the Web API base ending in /api/ (default https://slack.com/api/).
	APIURL string
	// ThreadReplies answers a top-level channel mention in a thread rooted at
	// the mention (nil means true).
	ThreadReplies *bool
	// EditInterval is the minimum time between two edits of one message (default 1s).
	EditInterval time.Duration
	// MaxMediaBytes caps each downloaded image (default 20 MiB); larger files are skipped.
	MaxMediaBytes int64
	HTTPClient    *http.Client // default: 30s timeout
	Logger        *slog.Logger // nil: discard

	// PingInterval is how long socketmode waits for Slack's next WebSocket ping
	// before reconnecting (default 30s).
	PingInterval time.Duration
	// HelloTimeout restarts the client when a connection brings no hello (default 30s).
	HelloTimeout time.Duration
	// WatchdogTimeout restarts the client when nothing at all (not even a
	// ping) arrived on a connection for this long (default 2m).
	WatchdogTimeout time.Duration
	// ReconnectMin is the first wait after a watchdog restart, doubling up
	// to ReconnectMax (defaults 1s and 30s).
	ReconnectMin time.Duration
	ReconnectMax time.Duration
	// HandshakeTimeout bounds the WebSocket dial (default 10s).
	HandshakeTimeout time.Duration
	// SignatureMaxAge is the accepted age of an HTTP request's timestamp (default 5m).
	SignatureMaxAge time.Duration
	// Now is the clock for signature checks (default time.Now).
	Now func() time.Time

	// IntakeWorkers bounds the channels whose events are handed to the sink
	// at the same time in Socket Mode (16); one channel's events are always
	// handled one at a time, in order.
	IntakeWorkers int
	// IntakeDepth bounds the envelopes waiting per channel (64) and
	// IntakeMaxChats the channels with waiting envelopes (1024); an envelope
	// beyond them is left unacknowledged, so Slack redelivers it.
	IntakeDepth    int
	IntakeMaxChats int
}

// Adapter is the Slack adapter. It implements channels.Channel, Editor,
// Typer, Readiness, Webhook and Verifier.
type Adapter struct {
	opts          Options
	log           *slog.Logger
	api           *slackapi.Client
	threadReplies bool

	ready   atomic.Bool
	botUser atomic.Pointer[string]
	botID   atomic.Pointer[string]
	sinkMu  sync.Mutex
	sink    channels.Sink    // HTTP mode: set while Run is running
	chatMu  lanes.KeyedMutex // serializes HTTP requests' Handle calls per channel

	namesMu     sync.Mutex
	names       map[string]string
	mentionRE   *regexp.Regexp // guarded by namesMu
	mentionUser string

	assistantMu sync.Mutex
	assistant   map[string]bool // "<channel>:<thread_ts>" of assistant threads
	joined      map[string]bool // "<channel>:<thread_ts>" of threads the bot answered in (guarded by assistantMu)

	running atomic.Bool

	// Socket Mode network connections open now / at most at once.
	liveConns    atomic.Int32
	maxLiveConns atomic.Int32
}

var (
	_ channels.Channel      = (*Adapter)(nil)
	_ channels.Editor       = (*Adapter)(nil)
	_ channels.Typer        = (*Adapter)(nil)
	_ channels.Readiness    = (*Adapter)(nil)
	_ channels.Webhook      = (*Adapter)(nil)
	_ channels.Verifier     = (*Adapter)(nil)
	_ channels.DirectTeller = (*Adapter)(nil)
)

// New validates opts and builds the adapter. It does not touch the network.
func New(opts Options) (*Adapter, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	logger := opts.Logger
	logger = logger.With("channel", Name)
	apiOpts := []slackapi.Option{
		slackapi.OptionHTTPClient(opts.HTTPClient),
		slackapi.OptionLog(slogWriter{logger}),
	}
	if opts.APIURL != "" {
		apiOpts = append(apiOpts, slackapi.OptionAPIURL(opts.APIURL))
	}
	if opts.AppToken != "" {
		apiOpts = append(apiOpts, slackapi.OptionAppLevelToken(opts.AppToken))
	}
	c := &Adapter{
		opts:          opts,
		log:           logger,
		api:           slackapi.New(opts.BotToken, apiOpts...),
		threadReplies: opts.ThreadReplies == nil || *opts.ThreadReplies,
		names:         map[string]string{},
		assistant:     map[string]bool{},
	}
	return c, nil
}

// validate reports the first problem with opts.
func (o Options) validate() error {
	if o.BotToken == "" {
		return errors.New("slack: a bot token (xoxb-…) is required: set SLACK_BOT_TOKEN")
	}
	mode := o.Mode
	switch mode {
	case "":
		mode = ModeSocket
	case ModeSocket, ModeHTTP:
	default:
		return fmt.Errorf("slack: unknown mode %q (want socket or http)", o.Mode)
	}
	if mode == ModeSocket && o.AppToken == "" {
		return errors.New("slack: socket mode needs an app-level token (xapp-…): set SLACK_APP_TOKEN")
	}
	if mode == ModeHTTP && o.SigningSecret == "" {
		return errors.New("slack: http mode needs the app's signing secret: set SLACK_SIGNING_SECRET")
	}
	return nil
}

// withDefaults fills the zero fields of validated options.
func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Mode == "" {
		o.Mode = ModeSocket
	}
	if o.APIURL != "" && !strings.HasSuffix(o.APIURL, "/") {
		o.APIURL += "/"
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.EditInterval, time.Second)
	def(&o.PingInterval, 30*time.Second)
	def(&o.HelloTimeout, 30*time.Second)
	def(&o.WatchdogTimeout, 2*time.Minute)
	def(&o.ReconnectMin, time.Second)
	def(&o.ReconnectMax, 30*time.Second)
	def(&o.HandshakeTimeout, 10*time.Second)
	def(&o.SignatureMaxAge, 5*time.Minute)
	if o.MaxMediaBytes <= 0 {
		o.MaxMediaBytes = 20 << 20
	}
	if o.HTTPClient == nil {
		// As many idle connections per host as intake lanes may send at
		// once: with net/http's default of 2, every further concurrent call
		// opened (and TLS-handshook) a connection and closed it afterwards.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 2 * DefaultIntakeWorkers
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second, Transport: tr}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.IntakeWorkers <= 0 {
		o.IntakeWorkers = DefaultIntakeWorkers
	}
	if o.IntakeDepth <= 0 {
		o.IntakeDepth = DefaultIntakeDepth
	}
	if o.IntakeMaxChats <= 0 {
		o.IntakeMaxChats = DefaultIntakeMaxChats
	}
	return o
}

// String describes the adapter without secrets.
func (c *Adapter) String() string {
	return fmt.Sprintf("slack(mode=%s, api=%s)", c.opts.Mode, c.apiURL())
}

func (c *Adapter) apiURL() string {
	if c.opts.APIURL == "" {
		return slackapi.APIURL
	}
	return c.opts.APIURL
}

// Name implements channels.Channel.
func (c *Adapter) Name() string { return Name }

// Ready reports whether the adapter is connected now: a Socket Mode hello was
// received on the current connection, or HTTP mode is running.
func (c *Adapter) Ready() bool { return c.ready.Load() }

// EditInterval implements channels.Editor.
func (c *Adapter) EditInterval() time.Duration { return c.opts.EditInterval }

// BotUserID returns the bot's user id learned from auth.test ("" before Run).
func (c *Adapter) BotUserID() string {
	if p := c.botUser.Load(); p != nil {
		return *p
	}
	return ""
}

func (c *Adapter) botBotID() string {
	if p := c.botID.Load(); p != nil {
		return *p
	}
	return ""
}

// Run connects and delivers inbound messages to sink until ctx is canceled
// (nil) or Slack rejects the credentials (a descriptive error).
func (c *Adapter) Run(ctx context.Context, sink channels.Sink) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("slack: Run is already running")
	}
	defer c.running.Store(false)
	defer c.ready.Store(false)

	if err := c.authTest(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if c.opts.Mode == ModeHTTP {
		return c.runHTTP(ctx, sink)
	}
	return c.runSocket(ctx, sink)
}

func (c *Adapter) authTest(ctx context.Context) error {
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := c.api.AuthTestContext(actx)
	if err != nil {
		return describeAuthError("bot token", "SLACK_BOT_TOKEN", "auth.test", err)
	}
	user, bot := resp.UserID, resp.BotID
	c.botUser.Store(&user)
	c.botID.Store(&bot)
	c.log.Info("slack: authenticated", "bot_user", user, "bot_id", bot, "team", resp.TeamID)
	return nil
}

// describeAuthError turns Slack's auth failures into errors an operator can act on.
func describeAuthError(what, env, method string, err error) error {
	var se slackapi.SlackErrorResponse
	if errors.As(err, &se) {
		switch se.Err {
		case "invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive":
			return fmt.Errorf("slack: the %s was rejected (%s): check %s: %w", what, se.Err, env, err)
		case "missing_scope":
			needed := se.Needed
			if needed == "" {
				needed = "unknown"
			}
			return fmt.Errorf("slack: the %s lacks the OAuth scope %q (missing_scope) for %s: add it in the app's settings and reinstall: %w", what, needed, method, err)
		}
		return fmt.Errorf("slack: %s failed (%s): %w", method, se.Err, err)
	}
	var sc slackapi.StatusCodeError
	if errors.As(err, &sc) && sc.Code == http.StatusNotFound {
		return fmt.Errorf("slack: %s answered 404: check the API URL: %w", method, err)
	}
	return fmt.Errorf("slack: %s: %w", method, err)
}

// slogWriter adapts slog to the Output interface slack-go logs through (only
// used if its debug mode were on; it stays off so payloads are not logged).
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Output(_ int, s string) error {
	w.l.Debug(strings.TrimSpace(s))
	return nil
}
