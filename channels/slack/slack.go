// Package slack is Switchboard's Slack adapter, built on slack-go/slack and its
// socketmode package. It owns the connection to Slack (Socket Mode over a
// WebSocket, or the Events API over HTTP), turning Slack events into
// channels.Message values for the shared handler, and delivering chunks with
// chat.postMessage / chat.update. Dedup, access control, group gating,
// commands, retries and streaming live in package channels, not here.
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
//   - HTTP mode (channels.Webhook): the signature (v0 HMAC-SHA256 of
//     "v0:ts:body", 5-minute window, injectable clock) is checked before
//     anything else; 200 after Handle returned nil, 500 otherwise so Slack
//     retries; Handle calls are serialized to keep arrival order.
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
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/markup"
)

// Modes.
const (
	ModeSocket = "socket"
	ModeHTTP   = "http"
)

// ChunkLimit is the length Format splits answers under (Slack truncates near
// 40,000 characters; long messages are hard to read well before that).
const ChunkLimit = 3500

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
	// ReconnectBackoff is the first wait after a watchdog restart, doubling up
	// to MaxReconnectBackoff (defaults 1s and 30s).
	ReconnectBackoff    time.Duration
	MaxReconnectBackoff time.Duration
	// HandshakeTimeout bounds the WebSocket dial (default 10s).
	HandshakeTimeout time.Duration
	// SignatureMaxAge is the accepted age of an HTTP request's timestamp (default 5m).
	SignatureMaxAge time.Duration
	// Now is the clock for signature checks (default time.Now).
	Now func() time.Time
}

// Channel is the Slack adapter. It implements channels.Channel, Editor,
// Typer, Readiness and Webhook.
type Channel struct {
	opts          Options
	log           *slog.Logger
	api           *slackapi.Client
	threadReplies bool

	ready    atomic.Bool
	botUser  atomic.Pointer[string]
	botID    atomic.Pointer[string]
	sinkMu   sync.Mutex
	sink     channels.Sink // HTTP mode: set while Run is running
	handleMu sync.Mutex    // serializes Handle calls from HTTP requests

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
	_ channels.Channel   = (*Channel)(nil)
	_ channels.Editor    = (*Channel)(nil)
	_ channels.Typer     = (*Channel)(nil)
	_ channels.Readiness = (*Channel)(nil)
	_ channels.Webhook   = (*Channel)(nil)
)

// New validates opts and builds the adapter. It does not touch the network.
func New(opts Options) (*Channel, error) {
	if opts.BotToken == "" {
		return nil, errors.New("slack: a bot token (xoxb-…) is required: set SLACK_BOT_TOKEN")
	}
	switch opts.Mode {
	case "":
		opts.Mode = ModeSocket
	case ModeSocket, ModeHTTP:
	default:
		return nil, fmt.Errorf("slack: unknown mode %q (want socket or http)", opts.Mode)
	}
	if opts.Mode == ModeSocket && opts.AppToken == "" {
		return nil, errors.New("slack: socket mode needs an app-level token (xapp-…): set SLACK_APP_TOKEN")
	}
	if opts.Mode == ModeHTTP && opts.SigningSecret == "" {
		return nil, errors.New("slack: http mode needs the app's signing secret: set SLACK_SIGNING_SECRET")
	}
	if opts.APIURL != "" && !strings.HasSuffix(opts.APIURL, "/") {
		opts.APIURL += "/"
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.EditInterval, time.Second)
	def(&opts.PingInterval, 30*time.Second)
	def(&opts.HelloTimeout, 30*time.Second)
	def(&opts.WatchdogTimeout, 2*time.Minute)
	def(&opts.ReconnectBackoff, time.Second)
	def(&opts.MaxReconnectBackoff, 30*time.Second)
	def(&opts.HandshakeTimeout, 10*time.Second)
	def(&opts.SignatureMaxAge, 5*time.Minute)
	if opts.MaxMediaBytes <= 0 {
		opts.MaxMediaBytes = 20 << 20
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	logger = logger.With("channel", "slack")
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
	c := &Channel{
		opts:          opts,
		log:           logger,
		api:           slackapi.New(opts.BotToken, apiOpts...),
		threadReplies: opts.ThreadReplies == nil || *opts.ThreadReplies,
		names:         map[string]string{},
		assistant:     map[string]bool{},
	}
	return c, nil
}

// String describes the adapter without secrets.
func (c *Channel) String() string {
	return fmt.Sprintf("slack(mode=%s, api=%s)", c.opts.Mode, c.apiURL())
}

func (c *Channel) apiURL() string {
	if c.opts.APIURL == "" {
		return slackapi.APIURL
	}
	return c.opts.APIURL
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "slack" }

// Ready reports whether the adapter is connected now: a Socket Mode hello was
// received on the current connection, or HTTP mode is running.
func (c *Channel) Ready() bool { return c.ready.Load() }

// EditInterval implements channels.Editor.
func (c *Channel) EditInterval() time.Duration { return c.opts.EditInterval }

// Format converts Markdown to Slack mrkdwn chunks under ChunkLimit.
func (c *Channel) Format(md string) []channels.Chunk { return markup.SlackChunks(md, ChunkLimit) }

// BotUserID returns the bot's user id learned from auth.test ("" before Run).
func (c *Channel) BotUserID() string {
	if p := c.botUser.Load(); p != nil {
		return *p
	}
	return ""
}

func (c *Channel) botBotID() string {
	if p := c.botID.Load(); p != nil {
		return *p
	}
	return ""
}

// Run connects and delivers inbound messages to sink until ctx is canceled
// (nil) or Slack rejects the credentials (a descriptive error).
func (c *Channel) Run(ctx context.Context, sink channels.Sink) error {
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
		c.sinkMu.Lock()
		c.sink = sink
		c.sinkMu.Unlock()
		c.ready.Store(true)
		c.log.Info("slack: receiving events over HTTP", "bot_user", c.BotUserID(), "pattern", c.WebhookPattern())
		<-ctx.Done()
		c.ready.Store(false)
		c.sinkMu.Lock()
		c.sink = nil
		c.sinkMu.Unlock()
		return nil
	}
	return c.runSocket(ctx, sink)
}

func (c *Channel) authTest(ctx context.Context) error {
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
