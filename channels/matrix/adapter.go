// Package matrix is Switchboard's Matrix adapter (client-server API v3,
// maunium.net/go/mautrix as the HTTP client). It owns the account's /sync
// long poll and its persisted since token, the normalization of room events
// into channels.Message (direct rooms, mentions, threads, media), invites,
// and the delivery primitives (Send, Edit, typing). Dedup, access, pairing,
// the inbox, commands and retries are the shared handler's (channels/hub),
// never this package's. It imports channels, channels/markup,
// channels/platform and internal/retry of the project.
//
// Files: adapter.go (Options, Adapter, New, Run: the sync loop), sync.go
// (the /sync and /messages wire types, gap filling), inbound.go (event →
// channels.Message, mentions, media, invites, encrypted rooms), rooms.go
// (direct rooms, members, display names), send.go
// (Format, Send, Edit, typing, error classification), platform.go (config
// section, descriptor), doctor.go (whoami and the media endpoints).
//
// Design decisions:
//
//   - Login is by access token only (channels.matrix.access_token); user_id
//     and device_id, when set, must be what /account/whoami says the token
//     belongs to (a mismatch ends Run with an error naming both, as does a
//     rejected token). There is no password login: a stored password would be
//     a second, stronger secret.
//   - Acknowledge after persist. The since token is the platform's
//     acknowledgement: it is written to Options.KV ("matrix/since/<user_id>")
//     only after every event of the batch was accepted by the sink (the
//     inbox write) or deliberately skipped, and every invite of the batch
//     was answered. When the sink refuses an event the rest of the batch is
//     dropped and, after a backoff, /sync is called with the old token: the
//     server returns the same events again, and the handler's persisted dedup
//     (message id = the event id, unique across Matrix) drops those already
//     accepted. A crash therefore replays, never loses. One replica syncs
//     (Descriptor.Runners, lease "matrix-sync").
//   - First start (no stored token): the initial sync is used for its token,
//     the account data (m.direct) and pending invites only; the rooms'
//     earlier messages are not answered (logged as a count).
//   - Gaps. A room whose new events exceed the sync's timeline limit comes
//     back `limited`; the events between the old since token and the
//     timeline's prev_batch are read with /rooms/{id}/messages (dir=f) and
//     handed on first, in order, so a long downtime loses nothing either.
//   - A room is direct when m.direct (the account data, read at start and
//     followed through /sync) lists it, or the invite said is_direct; on
//     joining such an invite the room is added to the account's m.direct,
//     as clients do, so the rule survives restarts. A listed room with more
//     than two members is not direct (an allowed user cannot turn a group
//     into a "direct" room that skips mention gating and gets pairing codes).
//   - Mentioned: m.mentions.user_ids names the bot (clients also put the
//     author of a replied-to message there, so replies to the bot count);
//     without m.mentions (older clients) the body containing the bot's user
//     id or display name counts; a reply to an event this process sent
//     counts too. @room does not. A leading mention ("Name: ", "@bot:server ")
//     and the reply fallback ("> <@user> …" lines) are stripped from Text.
//   - m.notice is what bots send: such messages arrive with Sender.IsBot,
//     so the handler drops them unless access.allow_bots (no bot loops).
//     The bot itself answers with m.notice for the same reason. Its own
//     events coming back through /sync are skipped here.
//   - Threads: an event with m.relates_to rel_type m.thread belongs to the
//     thread of its root; ThreadID is the root's event id, so the session
//     key is matrix:!room:server:$root (channels.ParseTarget reads
//     server-qualified chat ids, see channels/message.go). Answers in a
//     thread carry the thread relation with the reply fallback.
//   - Markdown goes out as org.matrix.custom.html formatted_body made by
//     channels/markup (the Telegram HTML dialect: b, i, s, code, pre, a,
//     blockquote, every other character escaped, raw HTML from the model shown
//     as text) with line breaks as <br>; body is the plain text. User text is
//     never passed on as HTML. Chunks stay under 4000 characters, far below
//     the 64 KiB event limit even after escaping.
//   - Exactly once: Send's transaction id is derived from Outgoing.Nonce
//     (stable per turn and chunk), and PUT /send/{type}/{txnId} is idempotent
//     per access token: a chunk resent after a crash, or after a transport
//     error, returns the event the server already has instead of posting it
//     twice. Transport errors are therefore Temporary, not Ambiguous.
//   - Streaming by edits: m.replace with m.new_content (body "* …" for
//     clients without edit support). Typing: PUT typing with a 30 s timeout,
//     refreshed every 20 s, taken down by stop.
//   - Media in (m.image, m.file, m.audio, m.video) through the authenticated
//     endpoint /_matrix/client/v1/media/download; larger than MaxMediaBytes
//     (by info.size or while reading) or failing, the attachment is dropped
//     with a warning and the text still goes on.
//   - Invites: the adapter does not decide access. It asks the sink, when
//     the sink is a channels.Admitter (the hub is), whether the inviter may
//     talk to the bot — in a direct invite as in a direct chat (pairing
//     mode: a stranger's direct invite is joined so the pairing code can be
//     sent; a group invite needs the inviter allowed). Joined when admitted,
//     declined (leave) otherwise, and declined when the sink cannot tell.
//     The invite state is the inviting server's, unsigned: an invite whose
//     state names two different inviters (one forged) is declined.
//   - Encrypted rooms: end-to-end encryption is not implemented (config
//     encryption: true is refused). The first m.room.encrypted event in a
//     room gets one plain notice (EncryptedNotice), remembered in KV so it is
//     sent once per room, not once per message.
package matrix

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/retry"
)

// Name is the channel's address prefix.
const Name = "matrix"

// KV is the small persistent store the since token lives in
// (platform.Deps.KV).
type KV interface {
	KVGet(ctx context.Context, key string) ([]byte, bool, error)
	KVPut(ctx context.Context, key string, val []byte) error
}

// Options configures an Adapter. Zero values take the defaults shown.
type Options struct {
	Homeserver  string // client-server base, https://matrix.example.org; required
	UserID      string // @bot:example.org; empty = whoever the token belongs to
	AccessToken string // required; never logged
	DeviceID    string // optional; checked against whoami when set

	KV KV // since token, direct rooms, notices; nil = kept in memory only

	EditInterval   time.Duration // minimum time between edits of a room; default 1s
	MaxMediaBytes  int64         // largest attachment downloaded; default 10 MiB; <0 disables media
	PollTimeout    time.Duration // /sync long-poll timeout; default 30s
	RequestTimeout time.Duration // per API call other than /sync; default 30s
	RetryMin       time.Duration // first backoff after a failed sync or Handle; default 500ms
	RetryMax       time.Duration // longest backoff; default 30s
	TypingInterval time.Duration // typing refresh; default 20s (the server shows it 30s)
	// TypingDelay is how long a turn runs before typing is first shown
	// (channels.QuickAnswer); negative shows it at once.
	TypingDelay time.Duration
	// After is the clock of TypingDelay (tests fire it by hand); default
	// time.After.
	After func(time.Duration) <-chan time.Time

	HTTPClient *http.Client // default: a client without overall timeout (calls use contexts)
	Logger     *slog.Logger // nil → discard
}

// LogValue keeps the access token out of structured logs.
func (o Options) LogValue() slog.Value {
	tok := `""`
	if o.AccessToken != "" {
		tok = "[redacted]"
	}
	return slog.GroupValue(slog.String("homeserver", o.Homeserver), slog.String("user_id", o.UserID),
		slog.String("access_token", tok))
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.EditInterval, time.Second)
	def(&o.PollTimeout, 30*time.Second)
	def(&o.RequestTimeout, 30*time.Second)
	def(&o.RetryMin, 500*time.Millisecond)
	def(&o.RetryMax, 30*time.Second)
	def(&o.TypingInterval, 20*time.Second)
	if o.TypingDelay == 0 {
		o.TypingDelay = channels.QuickAnswer
	}
	if o.After == nil {
		o.After = time.After
	}
	if o.MaxMediaBytes == 0 {
		o.MaxMediaBytes = 10 << 20
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Adapter is the Matrix adapter. It implements channels.Channel, Typer,
// Editor, Readiness and DirectTeller.
type Adapter struct {
	opts Options
	cli  *mautrix.Client
	log  *slog.Logger

	ready   atomic.Bool
	running sync.Mutex // one Run at a time

	mu       sync.Mutex
	self     string                     // the bot's user id (whoami)
	name     string                     // its display name
	since    string                     // the last batch handed on completely
	direct   map[string]bool            // room → listed in m.direct
	members  map[string]map[string]bool // room → joined users, once read
	names    map[string]string          // user → display name
	sent     map[string]bool            // event ids this process sent (replies to the bot)
	sentFIFO []string
	noticed  map[string]bool // rooms told about encryption

	saltMu sync.Mutex
	salt   string // this store's transaction-id salt (txnSalt)
}

var (
	_ channels.Channel      = (*Adapter)(nil)
	_ channels.Typer        = (*Adapter)(nil)
	_ channels.Editor       = (*Adapter)(nil)
	_ channels.Readiness    = (*Adapter)(nil)
	_ channels.DirectTeller = (*Adapter)(nil)
)

// New validates opts and builds an Adapter. It makes no network calls; Run
// calls whoami.
func New(opts Options) (*Adapter, error) {
	if opts.Homeserver == "" {
		return nil, errors.New("matrix: the homeserver URL is empty")
	}
	if opts.AccessToken == "" {
		return nil, errors.New("matrix: the access token is empty")
	}
	if opts.UserID != "" && !validUserID(opts.UserID) {
		return nil, fmt.Errorf("matrix: user id %q is not of the form @name:server", opts.UserID)
	}
	opts = opts.withDefaults()
	cli, err := mautrix.NewClient(opts.Homeserver, id.UserID(opts.UserID), opts.AccessToken)
	if err != nil {
		return nil, fmt.Errorf("matrix: homeserver %q: %w", opts.Homeserver, err)
	}
	cli.Client = opts.HTTPClient
	cli.DefaultHTTPRetries = 0 // retries are the handler's (Send) and the sync loop's
	cli.IgnoreRateLimit = true
	cli.DeviceID = id.DeviceID(opts.DeviceID)
	return &Adapter{opts: opts, cli: cli, log: opts.Logger.With("channel", Name), self: opts.UserID,
		direct: map[string]bool{}, members: map[string]map[string]bool{}, names: map[string]string{}, sent: map[string]bool{}, noticed: map[string]bool{}}, nil
}

// validUserID accepts @localpart:server.
func validUserID(s string) bool {
	local, server, ok := strings.Cut(strings.TrimPrefix(s, "@"), ":")
	return strings.HasPrefix(s, "@") && ok && local != "" && server != "" && !strings.ContainsAny(s, " \t\r\n/")
}

// Name implements channels.Channel.
func (a *Adapter) Name() string { return Name }

// Ready reports whether the last /sync succeeded.
func (a *Adapter) Ready() bool { return a.ready.Load() }

// EncryptedNotice is what an encrypted room is told, once.
const EncryptedNotice = "I can't read encrypted rooms yet; my messages here are not encrypted either. " +
	"Please talk to me in a room without encryption (or a direct chat created with encryption off)."

// Run syncs until ctx ends (nil) or the homeserver rejects the token (an
// error; the daemon's supervisor retries with backoff).
func (a *Adapter) Run(ctx context.Context, sink channels.Sink) error {
	a.running.Lock()
	defer a.running.Unlock()
	defer a.ready.Store(false)
	if err := a.start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	policy := a.retryPolicy()
	policy.OnRetry = func(_ int, wait time.Duration, err error) {
		a.ready.Store(false)
		a.log.Warn("sync failed", "err", err, "retry_in", wait)
	}
	handleBackoff := a.retryPolicy().Backoff()
	for {
		since := a.sinceToken()
		var batch *syncResponse
		err := retry.Do(ctx, policy, func(ctx context.Context) error {
			var err error
			batch, err = a.syncOnce(ctx, since)
			return syncFailed(err, since)
		})
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, errBadSince) {
			// Waiting would not help: the server will never take this
			// token again. Start from now, loudly.
			a.log.Error("the homeserver rejected the stored sync position; syncing from now on: messages sent since the last sync may be missed", "err", err)
			a.setSince(ctx, "")
			continue
		}
		if err != nil {
			return fmt.Errorf("matrix: sync: %w", err)
		}
		a.ready.Store(true)
		if err := a.handleBatch(ctx, sink, since, batch); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			wait := handleBackoff.Next()
			a.log.Warn("event not accepted by the handler; the batch will be fetched again", "err", err, "retry_in", wait)
			if retry.Sleep(ctx, wait) != nil {
				return nil
			}
			continue
		}
		handleBackoff.Reset()
		a.setSince(ctx, batch.NextBatch)
	}
}

// start checks the token (whoami), loads the display name, the stored
// since token and the account's m.direct.
func (a *Adapter) start(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, a.opts.RequestTimeout)
	defer cancel()
	who, err := a.cli.Whoami(cctx)
	if err != nil {
		if errors.Is(err, mautrix.MUnknownToken) || errors.Is(err, mautrix.MMissingToken) {
			return errors.New("matrix: the homeserver rejected the access token (M_UNKNOWN_TOKEN): set MATRIX_ACCESS_TOKEN to a valid token of the bot's account")
		}
		return fmt.Errorf("matrix: whoami: %w", err)
	}
	if a.opts.UserID != "" && string(who.UserID) != a.opts.UserID {
		return fmt.Errorf("matrix: the access token belongs to %s, not to channels.matrix.user_id %s", who.UserID, a.opts.UserID)
	}
	if a.opts.DeviceID != "" && who.DeviceID != "" && string(who.DeviceID) != a.opts.DeviceID {
		return fmt.Errorf("matrix: the access token belongs to device %s, not to channels.matrix.device_id %s", who.DeviceID, a.opts.DeviceID)
	}
	a.mu.Lock()
	a.self = string(who.UserID)
	a.mu.Unlock()
	if a.cli.UserID != who.UserID {
		// Only when user_id was not configured, on the first Run (a write
		// here would race with sends of a restarted Run otherwise).
		a.cli.UserID = who.UserID
	}
	if dn, err := a.cli.GetOwnDisplayName(cctx); err == nil && dn.DisplayName != "" {
		a.mu.Lock()
		a.name = dn.DisplayName
		a.mu.Unlock()
	}
	if err := a.loadDirect(cctx); err != nil {
		a.log.Warn("m.direct not read; direct rooms are learnt from sync", "err", err)
	}
	if a.sinceToken() == "" && a.opts.KV != nil {
		raw, ok, err := a.opts.KV.KVGet(cctx, a.kvKey("since"))
		if err != nil {
			return fmt.Errorf("matrix: read the since token: %w", err)
		}
		if ok {
			a.mu.Lock()
			a.since = string(raw)
			a.mu.Unlock()
		}
	}
	return nil
}

func (a *Adapter) kvKey(what string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return "matrix/" + what + "/" + a.self
}

func (a *Adapter) sinceToken() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.since
}

// setSince records the token of a batch handed on completely.
func (a *Adapter) setSince(ctx context.Context, tok string) {
	a.mu.Lock()
	changed := a.since != tok
	a.since = tok
	a.mu.Unlock()
	if !changed || a.opts.KV == nil {
		return
	}
	// An empty token (a refused one dropped) is stored too: the next
	// start syncs from now instead of offering the refused one again.
	if err := a.opts.KV.KVPut(ctx, a.kvKey("since"), []byte(tok)); err != nil && ctx.Err() == nil {
		// Not fatal: a restart syncs from the older token and the
		// handler's dedup drops what it already has.
		a.log.Warn("since token not stored", "err", err)
	}
}

func (a *Adapter) retryPolicy() retry.Policy {
	return retry.Policy{Initial: a.opts.RetryMin, Max: a.opts.RetryMax, Jitter: retry.DefaultJitter}
}

// errBadSince marks a /sync refused for its since token.
var errBadSince = errors.New("since token refused")

// syncFailed tells the retry loop what a failed /sync means: a rejected
// access token is permanent, a refused since token (another 4xx) too but
// marked errBadSince, a 429 waits retry_after_ms, anything else backs off.
func syncFailed(err error, since string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, mautrix.MUnknownToken) || errors.Is(err, mautrix.MMissingToken) {
		return retry.Permanent(fmt.Errorf("the homeserver rejected the access token: %w", err))
	}
	if since != "" && isClientError(err) {
		return retry.Permanent(fmt.Errorf("%w: %w", errBadSince, err))
	}
	if d, ok := retryAfter(err); ok {
		return retry.After(d, err)
	}
	return err
}
