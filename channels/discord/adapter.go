// Package discord is the Discord adapter: it connects to the Discord gateway
// with bwmarrin/discordgo, turns MESSAGE_CREATE events into channels.Message
// values, and sends, edits and types through Discord's REST API. It imports
// only channels, channels/markup, channels/lanes and the leaf internal/redact
// of the project
// (so it never compiles the agent or the store); dedup, access control and
// retries are the shared handler's (channels/hub).
//
// Files: adapter.go (Adapter, Options and their defaults and validation, New,
// Run), intake.go (the per-channel lanes that hand messages to the sink),
// inbound.go (event → channels.Message, catch-up from history, media,
// channel info), send.go (Format, Send, Edit, typing,
// rate limits, error classification), gateway.go (the gateway connection,
// reconnects, watchdog), cursors.go (per-channel last-seen ids and their
// persistence), transport.go (API and gateway URL overrides).
//
// What it owns, and the decisions taken:
//
//   - Connection. discordgo's own reconnect loop is switched off
//     (ShouldReconnectOnError=false) and Run drives Open itself, so that a
//     close code the gateway answers to IDENTIFY (4014 disallowed intents,
//     4004 bad token, 4010–4013) is seen and ends Run with a clear error
//     instead of being retried forever, and so that reconnect backoff is
//     configurable and stops with ctx. discordgo still runs heartbeats, their
//     ACK check (about five missed intervals → close), op 7 RECONNECT and op 9
//     INVALID_SESSION (fresh IDENTIFY); Run reopens after every disconnect,
//     which RESUMEs with the stored session id and sequence — 200 ms after
//     the disconnect, so that the lost connection's heartbeat goroutine,
//     which can call Session.Close once more, late, closes nothing instead
//     of the resumed connection (gateway.go, resumeSettle). A connection
//     that closed before READY/RESUMED gets a brand-new discordgo session,
//     so the next Open IDENTIFYs afresh and any refusal surfaces from Open.
//     On top, a watchdog ends Run with an error when the connection is
//     "online but deaf" (no dispatch and no heartbeat ACK for
//     WatchdogTimeout), so the supervisor restarts just this channel.
//     Note: discordgo v0.29.0 resumes against the gateway URL it was given,
//     not READY's resume_gateway_url.
//   - Missed messages. For every channel in which a message was seen in this
//     process the adapter keeps the last delivered message id. After READY or
//     RESUMED it fetches GET /channels/{id}/messages?after=<last id> and feeds
//     anything newer to the sink in order; live events at or below the cursor
//     are skipped, so RESUME replays and history fetches are delivered once.
//     If sink.Handle fails the cursor is not advanced ("not acknowledged"):
//     the channel is marked behind and caught up from history later (on the
//     next message in it, on reconnect, or every CatchUpRetry).
//   - Ordering and parallel intake. Events are handled synchronously by
//     discordgo (SyncEvents=true) and queued, without blocking the gateway
//     reader, to the lane of their Discord channel (channels/lanes): one
//     channel's messages and catch-ups run one at a time in arrival order,
//     so its cursor only advances in order, while up to IntakeWorkers
//     channels are handed to the sink concurrently (a slow Handle in one
//     chat does not hold up the others). Bounded: IntakeDepth messages per
//     channel, IntakeMaxChats channels; a refused message marks its channel
//     behind and it is caught up from history (after the lane's backlog, or
//     by the CatchUpRetry loop). When Run ends, queued messages are
//     abandoned with their cursors unmoved, so the next start fetches them.
//   - Addressing. DMs: ChatID = DM channel id, Direct. Threads: ChatID =
//     parent channel id, ThreadID = thread channel id, ParentID = parent;
//     Send/Edit to a target with ThreadID post into the thread channel.
//   - Sending. Message creates go through discordgo's request machinery
//     (same endpoint and rate-limit bucket as ChannelMessageSendComplex) with
//     discordgo.MessageSend plus "nonce"/"enforce_nonce", which MessageSend
//     lacks in v0.29.0. allowed_mentions is always {"parse": [],
//     "replied_user": true}: never @everyone, @here, roles or users. Replies in
//     guilds carry message_reference with fail_if_not_exists=false.
//   - Rate limits. discordgo's bucket limiter paces requests from the
//     X-RateLimit headers; a 429 is not retried blindly by discordgo
//     (WithRetryOnRatelimit(false)): if retry_after is at most
//     RateLimitMaxWait the adapter waits (ctx-aware) and retries once or
//     twice, otherwise it returns channels.RateLimited(retry_after).
//   - Endpoints. APIURL rewrites discord.com / discordapp.com / CDN hosts to
//     the given scheme+host through the injected http.Client's transport;
//     GatewayURL answers /gateway and /gateway/bot locally. discordgo's
//     package Endpoint* variables are never touched.
//   - Secrets. The token only travels in the Authorization header and
//     IDENTIFY/RESUME; discordgo's logger is silenced (it can print payloads)
//     and Options.String redacts it.
package discord

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

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/redact"
)

// Name is the channel's address prefix.
const Name = "discord"

// Defaults for zero Options fields.
const (
	DefaultEditInterval         = 1200 * time.Millisecond
	DefaultMaxMediaBytes        = 8 << 20
	DefaultTypingInterval       = 8 * time.Second
	DefaultRequestTimeout       = 30 * time.Second
	DefaultOpenTimeout          = 30 * time.Second
	DefaultWatchdogTimeout      = 5 * time.Minute
	DefaultReconnectMin         = time.Second
	DefaultReconnectMax         = 2 * time.Minute
	DefaultMaxReconnectFailures = 10
	DefaultRateLimitMaxWait     = 2 * time.Second
	DefaultCatchUpRetry         = 15 * time.Second
	DefaultMaxTrackedChannels   = 200
	DefaultIntakeWorkers        = 16
	DefaultIntakeDepth          = 64
	DefaultIntakeMaxChats       = 1024
)

// Intents requested at IDENTIFY: guilds, guild messages, direct messages and
// the privileged message content intent.
const Intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages |
	discordgo.IntentsDirectMessages | discordgo.IntentsMessageContent

// ErrMessageContentRefused is returned by Run when the gateway closes with
// 4014 because the Message Content intent is not enabled for the bot.
var ErrMessageContentRefused = errors.New("discord: the gateway refused the MESSAGE CONTENT intent (close 4014): enable 'Message Content Intent' for this bot in the Discord developer portal (Bot → Privileged Gateway Intents)")

// Options configures the adapter. The daemon fills it from config.
type Options struct {
	// Token is the bot token (with or without the "Bot " prefix). Required.
	Token string
	// APIURL, when set, is scheme://host[:port] that replaces discord.com and
	// the CDN hosts; discordgo's own /api/v9/... paths are kept.
	APIURL string
	// GatewayURL, when set, overrides the URL /gateway returns (ws:// or wss://).
	GatewayURL string
	// Guilds is the guild allowlist; empty means every guild. DMs always pass.
	Guilds []string
	// AllowBots passes other bots' messages to the sink (flagged IsBot);
	// otherwise they are dropped here.
	AllowBots bool
	// ShardID and ShardCount make Run connect as gateway shard ShardID of
	// ShardCount (IDENTIFY's "shard"; Discord routes a guild's events to
	// shard (guild_id >> 22) % ShardCount, DMs to shard 0). ShardCount 0
	// or 1 is an unsharded connection. Each shard is its own Adapter; any
	// of them sends.
	ShardID, ShardCount int
	// EditInterval is the minimum time between edits of one message's chat.
	EditInterval time.Duration
	// MaxMediaBytes caps each downloaded image (0: 8 MiB; negative: no media).
	MaxMediaBytes int64
	// HTTPClient is the base client (nil: a new one). Its Transport is wrapped.
	HTTPClient *http.Client
	// Logger (nil: discard).
	Logger *slog.Logger

	// TypingInterval is how often the typing indicator is refreshed (8s).
	TypingInterval time.Duration
	// TypingDelay is how long a turn runs before the typing indicator is
	// first shown (channels.QuickAnswer); negative shows it at once.
	TypingDelay time.Duration
	// After is the clock of TypingDelay (tests fire it by hand); default
	// time.After.
	After func(time.Duration) <-chan time.Time
	// RequestTimeout bounds each REST call (30s).
	RequestTimeout time.Duration
	// OpenTimeout bounds one gateway connect: dial, HELLO, IDENTIFY/RESUME (30s).
	OpenTimeout time.Duration
	// WatchdogTimeout: with no dispatch and no heartbeat ACK for this long
	// the connection counts as dead and Run returns an error (5m). It must
	// exceed the gateway's heartbeat interval.
	WatchdogTimeout time.Duration
	// WatchdogInterval is how often the watchdog looks (WatchdogTimeout/10).
	WatchdogInterval time.Duration
	// ReconnectMin/Max bound the backoff between failed connects (1s, 2m).
	ReconnectMin, ReconnectMax time.Duration
	// MaxReconnectFailures consecutive failed connects end Run with an
	// error (10; negative: never).
	MaxReconnectFailures int
	// RateLimitMaxWait: 429s asking to wait at most this long are waited out
	// and retried inside Send/Edit (2s; negative: never).
	RateLimitMaxWait time.Duration
	// CatchUpRetry is how often channels whose messages could not be handed
	// to the sink are retried from history (15s).
	CatchUpRetry time.Duration
	// Cursors, if set, persists each channel's last handled message id so
	// messages sent while the daemon was down are fetched at start.
	Cursors CursorStore
	// CursorFlush is how often changed cursors are saved (DefaultCursorFlush).
	CursorFlush time.Duration
	// MaxTrackedChannels bounds the channels whose last message id is kept
	// for catch-up after reconnects (200; the least recently active is
	// forgotten). Every reconnect costs one history request per channel.
	MaxTrackedChannels int

	// IntakeWorkers bounds the channels whose messages are handed to the
	// sink at the same time (16); one channel's messages are always handed
	// on one at a time, in order.
	IntakeWorkers int
	// IntakeDepth bounds the messages waiting per channel (64); beyond it
	// the channel is caught up from history once its backlog is done.
	IntakeDepth int
	// IntakeMaxChats bounds the channels with waiting messages (1024);
	// beyond it a channel is marked behind and caught up every CatchUpRetry.
	IntakeMaxChats int

	// gatewayHook, when set (tests), sees each gateway session the adapter
	// builds before it connects.
	gatewayHook func(*discordgo.Session)
}

// String describes the options without the token.
func (o Options) String() string {
	tok := "<empty>"
	if o.Token != "" {
		tok = "<redacted>"
	}
	return fmt.Sprintf("discord.Options{Token:%s APIURL:%q GatewayURL:%q Guilds:%v AllowBots:%t}",
		tok, redact.URL(o.APIURL), redact.URL(o.GatewayURL), o.Guilds, o.AllowBots)
}

// LogValue keeps the token out of structured logs.
func (o Options) LogValue() slog.Value { return slog.StringValue(o.String()) }

// Adapter is the Discord adapter. It implements channels.Channel, Typer,
// Editor and Readiness.
type Adapter struct {
	opts   Options
	log    *slog.Logger
	token  string // "Bot …"
	client *http.Client
	rest   *discordgo.Session // REST only, never opened
	guilds map[string]bool

	running atomic.Bool
	ready   atomic.Bool

	mu      sync.Mutex
	botID   string
	chans   map[string]chanInfo
	cursors map[string]*cursor
	saveMu  sync.Mutex // orders cursor saves (cursors.go)
	// cursorGen counts channels added to cursors (under mu); savedGen is
	// the cursorGen of the last snapshot written (under saveMu).
	cursorGen, savedGen uint64
}

var (
	_ channels.Channel      = (*Adapter)(nil)
	_ channels.Typer        = (*Adapter)(nil)
	_ channels.Editor       = (*Adapter)(nil)
	_ channels.Readiness    = (*Adapter)(nil)
	_ channels.DirectTeller = (*Adapter)(nil)
)

// New validates opts and builds the adapter. It does not connect.
func New(opts Options) (*Adapter, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	log := opts.Logger
	c := &Adapter{
		opts:    opts,
		log:     shardLog(log.With("channel", Name), opts),
		token:   "Bot " + opts.Token,
		client:  opts.client(),
		guilds:  map[string]bool{},
		chans:   map[string]chanInfo{},
		cursors: map[string]*cursor{},
	}
	for _, g := range opts.Guilds {
		c.guilds[g] = true
	}
	c.rest = c.newSession()
	return c, nil
}

// shardLog names the shard in a sharded adapter's log lines.
func shardLog(l *slog.Logger, o Options) *slog.Logger {
	if o.ShardCount > 1 {
		return l.With("shard", fmt.Sprintf("%d/%d", o.ShardID, o.ShardCount))
	}
	return l
}

// bareToken is the token without spaces around it and without "Bot ".
func bareToken(t string) string {
	return strings.TrimPrefix(strings.TrimSpace(t), "Bot ")
}

// validate reports the first problem with opts.
func (o Options) validate() error {
	if bareToken(o.Token) == "" {
		return errors.New("discord: token is required")
	}
	if o.APIURL != "" {
		u, err := url.Parse(o.APIURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return fmt.Errorf("discord: api_url %q must be scheme://host[:port] (e.g. http://127.0.0.1:9001)", o.APIURL)
		}
	}
	if o.ShardCount > 1 && (o.ShardID < 0 || o.ShardID >= o.ShardCount) {
		return fmt.Errorf("discord: shard %d is outside 0..%d", o.ShardID, o.ShardCount-1)
	}
	if o.GatewayURL != "" {
		u, err := url.Parse(o.GatewayURL)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return fmt.Errorf("discord: gateway_url %q must be a ws:// or wss:// URL", o.GatewayURL)
		}
	}
	return nil
}

// keepAliveTransport is net/http's default transport keeping as many idle
// connections per host as intake lanes may send at once: with the default
// of 2, every further concurrent send opened (and TLS-handshook) a
// connection and closed it after one call.
func keepAliveTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 2 * DefaultIntakeWorkers
	return tr
}

// client is the HTTP client discordgo uses: a copy of HTTPClient whose
// transport rewrites Discord's hosts to APIURL and answers gateway discovery
// when GatewayURL is set. opts must be validated.
func (o Options) client() *http.Client {
	var api *url.URL
	if o.APIURL != "" {
		api, _ = url.Parse(o.APIURL)
	}
	base := o.HTTPClient
	if base == nil {
		base = &http.Client{Transport: keepAliveTransport()}
	}
	cl := *base
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	cl.Transport = &rewriteTransport{base: rt, api: api, gateway: o.GatewayURL}
	if cl.Timeout == 0 {
		cl.Timeout = o.RequestTimeout
	}
	return &cl
}

// withDefaults fills the zero fields of validated options (the token loses
// its "Bot " prefix).
func (o Options) withDefaults() Options {
	o.Token = bareToken(o.Token)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.EditInterval, DefaultEditInterval)
	def(&o.TypingInterval, DefaultTypingInterval)
	if o.TypingDelay == 0 {
		o.TypingDelay = channels.QuickAnswer
	}
	if o.After == nil {
		o.After = time.After
	}
	def(&o.RequestTimeout, DefaultRequestTimeout)
	def(&o.OpenTimeout, DefaultOpenTimeout)
	def(&o.WatchdogTimeout, DefaultWatchdogTimeout)
	def(&o.WatchdogInterval, o.WatchdogTimeout/10)
	def(&o.ReconnectMin, DefaultReconnectMin)
	def(&o.ReconnectMax, DefaultReconnectMax)
	def(&o.CatchUpRetry, DefaultCatchUpRetry)
	def(&o.CursorFlush, DefaultCursorFlush)
	if o.RateLimitMaxWait == 0 {
		o.RateLimitMaxWait = DefaultRateLimitMaxWait
	}
	if o.MaxMediaBytes == 0 {
		o.MaxMediaBytes = DefaultMaxMediaBytes
	}
	if o.MaxReconnectFailures == 0 {
		o.MaxReconnectFailures = DefaultMaxReconnectFailures
	}
	if o.MaxTrackedChannels <= 0 {
		o.MaxTrackedChannels = DefaultMaxTrackedChannels
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

// newSession builds a discordgo session wired to the injected client, with
// the library's logging silenced and its reconnect loop off.
func (c *Adapter) newSession() *discordgo.Session {
	s, _ := discordgo.New(c.token) // New never fails
	s.LogLevel = -1                // below LogError: discordgo prints nothing
	s.Client = c.client
	s.ShouldReconnectOnError = false
	s.ShouldReconnectVoiceOnSessionError = false
	s.SyncEvents = true
	s.StateEnabled = false
	s.Identify.Intents = Intents
	if c.opts.ShardCount > 1 {
		s.ShardID, s.ShardCount = c.opts.ShardID, c.opts.ShardCount
	}
	return s
}

// Name implements channels.Channel.
func (c *Adapter) Name() string { return Name }

// Ready reports whether the gateway is connected (after READY/RESUMED).
func (c *Adapter) Ready() bool { return c.ready.Load() }

// EditInterval implements channels.Editor.
func (c *Adapter) EditInterval() time.Duration { return c.opts.EditInterval }

func (c *Adapter) setBotID(id string) {
	if id == "" {
		return
	}
	c.mu.Lock()
	c.botID = id
	c.mu.Unlock()
}

func (c *Adapter) bot() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.botID
}

// Run connects to the gateway and feeds messages to sink until ctx ends
// (nil) or the connection fails in a way reconnecting cannot fix (error).
func (c *Adapter) Run(ctx context.Context, sink channels.Sink) error {
	if sink == nil {
		return errors.New("discord: Run: nil sink")
	}
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("discord: Run is already active")
	}
	defer c.running.Store(false)
	defer c.ready.Store(false)

	rctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	me, err := c.rest.User("@me", discordgo.WithContext(rctx))
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		var re *discordgo.RESTError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusUnauthorized {
			return errors.New("discord: the bot token was rejected (401 Unauthorized on GET /users/@me)")
		}
		return fmt.Errorf("discord: GET /users/@me: %w", err)
	}
	c.setBotID(me.ID)

	runCtx, stop := context.WithCancel(ctx)
	r := &run{
		c:            c,
		ctx:          runCtx,
		sink:         sink,
		dial:         &trackingDialer{},
		disconnected: make(chan struct{}, 1),
	}
	c.loadCursors(runCtx)
	r.in = r.newIntake()
	retryDone := make(chan struct{})
	go func() {
		defer close(retryDone)
		r.retryLoop()
	}()
	// The cursors are flushed until the lanes stopped, so the last save
	// includes every message the sink accepted.
	flushCtx, stopFlush := context.WithCancel(context.WithoutCancel(ctx))
	flushDone := make(chan struct{})
	go func() {
		defer close(flushDone)
		c.flushCursors(flushCtx)
	}()
	defer func() {
		stop()
		r.closeGateway()
		if n := r.in.lanes.Close(); n > 0 {
			c.log.Info("discord: stopping; queued messages left for catch-up from history", "messages", n)
		}
		<-retryDone
		stopFlush()
		<-flushDone
	}()
	c.log.Info("discord: connecting", "bot", me.Username)
	return r.loop()
}
