// Package discord is the Discord adapter: it connects to the Discord gateway
// with bwmarrin/discordgo, turns MESSAGE_CREATE events into channels.Message
// values, and sends, edits and types through Discord's REST API.
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
//     which RESUMEs with the stored session id and sequence. A connection
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
//   - Ordering. Events are handled synchronously by discordgo
//     (SyncEvents=true) and queued to one worker goroutine per Run, which
//     calls sink.Handle in arrival order.
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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/markup"
	"github.com/switchboard-bot/switchboard/internal/redact"
)

// Name is the channel's address prefix.
const Name = "discord"

// Message limits used by Format.
const (
	MessageLimit = 2000
	MaxLines     = 17
)

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

// Channel is the Discord adapter. It implements channels.Channel, Typer,
// Editor and Readiness.
type Channel struct {
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
}

var (
	_ channels.Channel   = (*Channel)(nil)
	_ channels.Typer     = (*Channel)(nil)
	_ channels.Editor    = (*Channel)(nil)
	_ channels.Readiness = (*Channel)(nil)
)

// New validates opts and builds the adapter. It does not connect.
func New(opts Options) (*Channel, error) {
	tok := strings.TrimSpace(opts.Token)
	tok = strings.TrimPrefix(tok, "Bot ")
	if tok == "" {
		return nil, errors.New("discord: token is required")
	}
	var api *url.URL
	if opts.APIURL != "" {
		u, err := url.Parse(opts.APIURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return nil, fmt.Errorf("discord: api_url %q must be scheme://host[:port] (e.g. http://127.0.0.1:9001)", opts.APIURL)
		}
		api = u
	}
	if opts.GatewayURL != "" {
		u, err := url.Parse(opts.GatewayURL)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return nil, fmt.Errorf("discord: gateway_url %q must be a ws:// or wss:// URL", opts.GatewayURL)
		}
	}
	setDefaults(&opts)

	base := opts.HTTPClient
	if base == nil {
		base = &http.Client{}
	}
	cl := *base
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	cl.Transport = &rewriteTransport{base: rt, api: api, gateway: opts.GatewayURL}
	if cl.Timeout == 0 {
		cl.Timeout = opts.RequestTimeout
	}

	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Channel{
		opts:    opts,
		log:     log.With("channel", Name),
		token:   "Bot " + tok,
		client:  &cl,
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

func setDefaults(o *Options) {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.EditInterval, DefaultEditInterval)
	def(&o.TypingInterval, DefaultTypingInterval)
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
}

// newSession builds a discordgo session wired to the injected client, with
// the library's logging silenced and its reconnect loop off.
func (c *Channel) newSession() *discordgo.Session {
	s, _ := discordgo.New(c.token) // New never fails
	s.LogLevel = -1                // below LogError: discordgo prints nothing
	s.Client = c.client
	s.ShouldReconnectOnError = false
	s.ShouldReconnectVoiceOnSessionError = false
	s.SyncEvents = true
	s.StateEnabled = false
	s.Identify.Intents = Intents
	return s
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return Name }

// Ready reports whether the gateway is connected (after READY/RESUMED).
func (c *Channel) Ready() bool { return c.ready.Load() }

// EditInterval implements channels.Editor.
func (c *Channel) EditInterval() time.Duration { return c.opts.EditInterval }

// Format converts Markdown to Discord chunks of at most 2000 characters and
// about 17 lines, never breaking code fences.
func (c *Channel) Format(md string) []channels.Chunk {
	return markup.DiscordChunks(md, MessageLimit, MaxLines)
}

func (c *Channel) setBotID(id string) {
	if id == "" {
		return
	}
	c.mu.Lock()
	c.botID = id
	c.mu.Unlock()
}

func (c *Channel) bot() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.botID
}

// postChannel is the Discord channel a target addresses.
func postChannel(t channels.Target) string {
	if t.ThreadID != "" {
		return t.ThreadID
	}
	return t.ChatID
}

func allowedMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}, RepliedUser: true}
}

// sendBody is discordgo.MessageSend plus the nonce fields v0.29.0 lacks.
type sendBody struct {
	*discordgo.MessageSend
	Nonce        string `json:"nonce,omitempty"`
	EnforceNonce bool   `json:"enforce_nonce,omitempty"`
}

// discordNonce maps an Outgoing.Nonce to Discord's ≤25-character nonce,
// deterministically.
func discordNonce(n string) string {
	if len(n) <= 25 {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return "sb" + hex.EncodeToString(sum[:])[:23]
}

// Send posts one chunk and returns the new message id.
func (c *Channel) Send(ctx context.Context, out channels.Outgoing) (string, error) {
	chID := postChannel(out.Target)
	if chID == "" {
		return "", channels.Permanent(errors.New("discord: send: empty target"))
	}
	text := out.Text
	if text == "" {
		text = out.Plain
	}
	if strings.TrimSpace(text) == "" {
		return "", channels.Permanent(errors.New("discord: send: empty message"))
	}
	data := &discordgo.MessageSend{Content: text, AllowedMentions: allowedMentions()}
	if out.ReplyTo != "" && !c.isDM(chID) {
		no := false
		data.Reference = &discordgo.MessageReference{MessageID: out.ReplyTo, ChannelID: chID, FailIfNotExists: &no}
	}
	body := sendBody{MessageSend: data, Nonce: discordNonce(out.Nonce)}
	body.EnforceNonce = body.Nonce != ""
	endpoint := discordgo.EndpointChannelMessages(chID)
	var msg discordgo.Message
	err := c.do(ctx, "send", false, func(opts ...discordgo.RequestOption) error {
		resp, err := c.rest.RequestWithBucketID(http.MethodPost, endpoint, body, endpoint, opts...)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(resp, &msg); err != nil {
			return fmt.Errorf("%w: %v", discordgo.ErrJSONUnmarshal, err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if msg.ID == "" {
		return "", channels.Ambiguous(errors.New("discord: send: response carried no message id"))
	}
	return msg.ID, nil
}

// Edit replaces the text of a message the bot sent.
func (c *Channel) Edit(ctx context.Context, target channels.Target, messageID, text string) error {
	chID := postChannel(target)
	if chID == "" || messageID == "" {
		return channels.Permanent(errors.New("discord: edit: empty target or message id"))
	}
	if strings.TrimSpace(text) == "" {
		return channels.Permanent(errors.New("discord: edit: empty message"))
	}
	content := text
	edit := &discordgo.MessageEdit{ID: messageID, Channel: chID, Content: &content, AllowedMentions: allowedMentions()}
	return c.do(ctx, "edit", true, func(opts ...discordgo.RequestOption) error {
		_, err := c.rest.ChannelMessageEditComplex(edit, opts...)
		return err
	})
}

// StartTyping shows "typing…" in the target now and every TypingInterval
// until stop is called (or ctx ends). Failures are logged, never returned.
func (c *Channel) StartTyping(ctx context.Context, target channels.Target) (stop func()) {
	chID := postChannel(target)
	tctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(c.opts.TypingInterval)
		defer tick.Stop()
		for {
			rctx, rcancel := context.WithTimeout(tctx, c.opts.RequestTimeout)
			err := c.rest.ChannelTyping(chID, discordgo.WithContext(rctx), discordgo.WithRetryOnRatelimit(false))
			rcancel()
			if err != nil && tctx.Err() == nil {
				c.log.Debug("discord: typing indicator failed", "chat", chID, "err", err)
			}
			select {
			case <-tctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}

// do runs one REST call with a per-call timeout and classifies its error.
// Short 429s are waited out and retried (at most twice).
func (c *Channel) do(ctx context.Context, op string, idempotent bool, call func(...discordgo.RequestOption) error) error {
	for attempt := 0; ; attempt++ {
		var wrote atomic.Bool
		trace := &httptrace.ClientTrace{
			GotConn: func(httptrace.GotConnInfo) { wrote.Store(false) },
			WroteRequest: func(i httptrace.WroteRequestInfo) {
				if i.Err == nil {
					wrote.Store(true)
				}
			},
		}
		rctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
		err := call(discordgo.WithContext(httptrace.WithClientTrace(rctx, trace)), discordgo.WithRetryOnRatelimit(false))
		cancel()
		if err == nil {
			return nil
		}
		var rl *discordgo.RateLimitError
		if errors.As(err, &rl) {
			wait := rl.RetryAfter
			if attempt < 2 && c.opts.RateLimitMaxWait > 0 && wait <= c.opts.RateLimitMaxWait {
				c.log.Debug("discord: rate limited, waiting", "op", op, "retry_after", wait)
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return fmt.Errorf("discord: %s: %w", op, ctx.Err())
				case <-t.C:
				}
				continue
			}
			return channels.RateLimited(wait, fmt.Errorf("discord: %s: %w", op, err))
		}
		return classify(ctx, op, err, wrote.Load() && !idempotent)
	}
}

// classify maps a discordgo/transport error to the shared error kinds.
func classify(ctx context.Context, op string, err error, mayExist bool) error {
	werr := fmt.Errorf("discord: %s: %w", op, err)
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		switch code := re.Response.StatusCode; {
		case code == http.StatusTooManyRequests:
			return channels.RateLimited(retryAfterHeader(re.Response.Header), werr)
		case code >= 500 || code == http.StatusRequestTimeout:
			return channels.Temporary(werr)
		default:
			return channels.Permanent(werr)
		}
	}
	if errors.Is(err, discordgo.ErrJSONUnmarshal) {
		// The platform answered 2xx: the message exists, its id is unknown.
		if mayExist {
			return channels.Ambiguous(werr)
		}
		return channels.Temporary(werr)
	}
	if ctx.Err() != nil && !mayExist {
		return fmt.Errorf("discord: %s: %w", op, ctx.Err())
	}
	if mayExist {
		return channels.Ambiguous(werr)
	}
	return channels.Temporary(werr)
}

func retryAfterHeader(h http.Header) time.Duration {
	var secs float64
	if _, err := fmt.Sscanf(h.Get("Retry-After"), "%g", &secs); err == nil && secs > 0 {
		return time.Duration(secs * float64(time.Second))
	}
	return time.Second
}

// ---- transport ----

// rewriteTransport points discordgo at another API host and answers gateway
// discovery locally when a gateway URL override is configured.
type rewriteTransport struct {
	base    http.RoundTripper
	api     *url.URL
	gateway string
}

func isDiscordHost(host string) bool {
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	host = strings.ToLower(host)
	return host == "discord.com" || strings.HasSuffix(host, ".discord.com") ||
		host == "discordapp.com" || strings.HasSuffix(host, ".discordapp.com") ||
		strings.HasSuffix(host, ".discordapp.net") || host == "discord.gg"
}

func (t *rewriteTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !isDiscordHost(req.URL.Host) {
		return t.base.RoundTrip(req)
	}
	p := req.URL.Path
	if t.gateway != "" && req.Method == http.MethodGet && strings.HasPrefix(p, "/api/") &&
		(strings.HasSuffix(p, "/gateway") || strings.HasSuffix(p, "/gateway/bot")) {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		payload := map[string]any{"url": t.gateway}
		if strings.HasSuffix(p, "/bot") {
			payload["shards"] = 1
		}
		b, _ := json.Marshal(payload)
		return &http.Response{
			Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:        http.Header{"Content-Type": []string{"application/json"}},
			Body:          io.NopCloser(strings.NewReader(string(b))),
			ContentLength: int64(len(b)), Request: req,
		}, nil
	}
	if t.api == nil {
		return t.base.RoundTrip(req)
	}
	r2 := req.Clone(req.Context())
	r2.URL.Scheme = t.api.Scheme
	r2.URL.Host = t.api.Host
	r2.Host = ""
	return t.base.RoundTrip(r2)
}
