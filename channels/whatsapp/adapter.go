// Package whatsapp is Switchboard's WhatsApp adapter for Meta's WhatsApp
// Business Cloud API (the Graph API over HTTPS; no official Go client
// exists, so the package speaks it with net/http and small typed structs).
// It owns the webhook (verification and signed event deliveries), turning
// messages into channels.Message values for the shared handler, media
// downloads, and delivering chunks with POST /{phone-number-id}/messages.
// Dedup, access control, pairing, commands, retries and the outbox live in
// the shared handler (channels/hub) and channels/outbound, not here; the
// package imports only channels, channels/markup and channels/lanes of the
// project.
//
// Files: adapter.go (Adapter, Options, New, Run, the credential check),
// webhook.go (GET verification, POST signature checks, ack after persist),
// inbound.go (webhook payload → channels.Message, media download), send.go
// (Format, Send, templates, typing and read receipts, error classification),
// dialect.go (Markdown → WhatsApp formatting), platform.go (the registry
// descriptor, config section, validation), doctor.go (doctor's checks).
//
// Design decisions:
//
//   - Webhook-only, so it runs on every replica (no lease). Run checks the
//     credentials once (GET /{phone-number-id}), then accepts deliveries
//     until its context ends; while Run is not running the webhook answers
//     503 and Meta delivers again later.
//   - Verification (GET): hub.mode=subscribe and hub.verify_token equal to
//     the configured verify_token (constant-time) echo hub.challenge as
//     text/plain; anything else is 403. An empty verify_token verifies
//     nothing.
//   - Deliveries (POST): the body (at most 1 MiB, else 413 without reading
//     more) is authenticated first: X-Hub-Signature-256 must be
//     "sha256=" + hex HMAC-SHA256(app secret, raw body), compared in
//     constant time, else 401 and nothing is parsed. WhatsApp has no
//     timestamp header, so staleness comes from each message's own
//     timestamp: a message older than MaxAge (24 h, the customer-service
//     window: an answer to it would be refused by WhatsApp anyway) or more
//     than 5 minutes in the future is acknowledged and dropped. Replays
//     within that window are caught by the hub's persisted dedup on
//     (channel, message id) — the wamid, unique per message — which keeps
//     ids for 7 days, longer than MaxAge. Changes for another phone number
//     id (one app serving several numbers) are ignored.
//   - Ack after persist: a delivery is answered 200 only once sink.Handle
//     returned nil for every message in it; otherwise 500 (503 before Run),
//     so Meta delivers the whole body again and the hub's dedup drops the
//     messages it already has. One chat's messages are handed to the sink
//     one at a time (a per-chat lock), other chats in parallel.
//   - Ids: every Cloud API chat is one user and the business, so Direct is
//     always true and ChatID = Sender.ID = "+" + wa_id, the E.164 number
//     (the webhook's wa_id has no '+'): targets read whatsapp:+4915112345678
//     and user ids whatsapp:user:+4915112345678. Send accepts a chat id with
//     or without the '+' (and ignores spaces and dashes). MessageID is the
//     wamid. A message replying to another carries its id in ReplyTo and
//     counts as Mentioned.
//   - Message types: text; image, sticker, audio (voice notes too), video and
//     document go to Media (GET /{media-id} for the URL, then the URL with
//     the bearer token, only over HTTPS or to the api_url's own host, and
//     never following a redirect: a 3xx drops the attachment, so no request
//     and no token reach the redirect's target; at most MaxMediaBytes,
//     checked before and while downloading; the sha256 WhatsApp gives is
//     verified), their caption to
//     Text; button and interactive replies as their title; a location as
//     text. A download the platform refuses (4xx, too large, bad checksum)
//     drops the attachment and says so in Text, so the user gets an answer;
//     a temporary failure (network, 5xx) answers 500 so Meta delivers
//     again. Reactions, unsupported types and system messages are ignored.
//   - Statuses callbacks (sent, delivered, read, failed) are not messages:
//     the bot's own messages never come back as messages. A failed status
//     is logged at WARN with WhatsApp's reason (131047: outside the
//     24-hour window). Only the "messages" field is read, so coexistence
//     echoes (smb_message_echoes) are ignored, and a message whose sender
//     is the business's own number is dropped: the bot never answers
//     itself.
//   - Sending: text messages of at most 4,000 characters (WhatsApp's limit
//     is 4,096), WhatsApp formatting (dialect.go). No edits exist, so there
//     is no streaming: the final answer only. Outgoing.ReplyTo is ignored
//     (a one-to-one chat needs no quote). Outgoing.Nonce goes out as
//     biz_opaque_callback_data, which status callbacks echo.
//   - The 24-hour customer-service window: outside it WhatsApp refuses
//     free-form messages (error 131047). A delivery whose context carries a
//     purpose (channels.WithPurpose: the heartbeat's greetings, reminder
//     jobs) with a template configured under that purpose is then sent as
//     that template, the text as its one body parameter; anything else
//     fails as a permanent error naming the reason, which channels/outbound
//     records as a failed delivery and never retries.
//   - Typing: the Cloud API shows typing only together with marking a
//     received message read (status: read + typing_indicator), for up to
//     25 s or until the answer is sent. StartTyping marks the chat's last
//     received message read with the indicator and refreshes it every
//     TypingInterval until stop; a chat without a received message (a job's
//     delivery) shows nothing.
//   - Errors: rate limits (130429, 131056, 80007, 4, 613, HTTP 429) →
//     RateLimited (Retry-After when given, else a default per code); auth,
//     invalid parameters, unreachable recipients, 131047 → Permanent; WhatsApp's
//     documented transient codes (1, 2, 131000, 131016) and failures before
//     the request was written → Temporary; a transport failure after it was
//     written or a 5xx without an error body → Ambiguous (the message may
//     exist; the Cloud API has no idempotency key to ask with).
//   - Secrets: the access token, app secret and verify token never appear in
//     logs, errors or String(); Graph error messages are logged as
//     WhatsApp's text, which carries no token.
package whatsapp

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

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/lanes"
)

// Name is the channel's address prefix.
const Name = "whatsapp"

// WebhookPath is where the daemon mounts the webhook (GET and POST).
const WebhookPath = "/webhooks/whatsapp"

// DefaultAPIURL is the Graph API root; APIVersion is appended by the adapter.
const DefaultAPIURL = "https://graph.facebook.com"

// APIVersion is the Graph API version the adapter speaks.
const APIVersion = "v23.0"

// Template is a message template approved in WhatsApp Manager, used outside
// the 24-hour window. Its body must have exactly one variable, {{1}}.
type Template struct {
	Name     string
	Language string // "en_US"
}

// Options configures the adapter. Secrets are plain strings here and are
// never logged.
type Options struct {
	PhoneNumberID string // the business phone number's id (not the number)
	AccessToken   string // a system user token with whatsapp_business_messaging
	AppSecret     string // verifies X-Hub-Signature-256
	VerifyToken   string // the webhook verification token chosen in the app dashboard
	// APIURL is the Graph API root (default https://graph.facebook.com);
	// requests go to <APIURL>/<APIVersion>/….
	APIURL string
	// Templates by purpose ("greeting", "reminder"), for deliveries outside
	// the 24-hour window.
	Templates map[string]Template
	// MaxMediaBytes caps each downloaded attachment (default 20 MiB).
	MaxMediaBytes int64
	// MaxAge drops messages older than this (default 24h).
	MaxAge time.Duration
	// TypingInterval refreshes the typing indicator (default 20s; WhatsApp
	// shows it for 25 s).
	TypingInterval time.Duration
	HTTPClient     *http.Client // default: 30s timeout
	Logger         *slog.Logger // nil: discard
	Now            func() time.Time
}

// Adapter is the WhatsApp adapter. It implements channels.Channel, Typer,
// Readiness, Webhook and DirectTeller.
type Adapter struct {
	opts Options
	log  *slog.Logger
	base string // <APIURL>/<APIVersion>
	// media is HTTPClient that never follows a redirect: a media URL
	// answering 3xx is a dropped attachment, so neither the bearer token
	// nor a request reaches a host the URL redirects to (an internal
	// service, the daemon's own admin API).
	media *http.Client

	ready   atomic.Bool
	running atomic.Bool
	sinkMu  sync.Mutex
	sink    channels.Sink
	chatMu  lanes.KeyedMutex

	lastMu sync.Mutex
	last   map[string]string // chat id → last received wamid (typing, read)
}

var (
	_ channels.Channel      = (*Adapter)(nil)
	_ channels.Typer        = (*Adapter)(nil)
	_ channels.Readiness    = (*Adapter)(nil)
	_ channels.Webhook      = (*Adapter)(nil)
	_ channels.DirectTeller = (*Adapter)(nil)
)

// New validates opts and builds the adapter. It does not touch the network.
func New(opts Options) (*Adapter, error) {
	switch {
	case opts.PhoneNumberID == "":
		return nil, errors.New("whatsapp: phone_number_id is required (WhatsApp Manager → API setup)")
	case opts.AccessToken == "":
		return nil, errors.New("whatsapp: an access token is required: set WHATSAPP_ACCESS_TOKEN")
	case opts.AppSecret == "":
		return nil, errors.New("whatsapp: the app secret is required to verify webhook signatures: set WHATSAPP_APP_SECRET")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.APIURL == "" {
		opts.APIURL = DefaultAPIURL
	}
	if opts.MaxMediaBytes <= 0 {
		opts.MaxMediaBytes = 20 << 20
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = 24 * time.Hour
	}
	if opts.TypingInterval <= 0 {
		opts.TypingInterval = 20 * time.Second
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	media := *opts.HTTPClient
	media.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Adapter{
		opts:  opts,
		log:   opts.Logger.With("channel", Name),
		base:  strings.TrimRight(opts.APIURL, "/") + "/" + APIVersion,
		media: &media,
		last:  map[string]string{},
	}, nil
}

// String describes the adapter without secrets.
func (c *Adapter) String() string {
	return fmt.Sprintf("whatsapp(phone_number_id=%s, api=%s)", c.opts.PhoneNumberID, c.opts.APIURL)
}

// Name implements channels.Channel.
func (c *Adapter) Name() string { return Name }

// Ready reports whether the webhook accepts deliveries.
func (c *Adapter) Ready() bool { return c.ready.Load() }

// IsDirect implements channels.DirectTeller: every Cloud API chat is direct.
func (c *Adapter) IsDirect(context.Context, channels.Target) (bool, error) { return true, nil }

// Run checks the credentials, then accepts webhook deliveries into sink
// until ctx is canceled (nil). Rejected credentials are an error.
func (c *Adapter) Run(ctx context.Context, sink channels.Sink) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("whatsapp: Run is already running")
	}
	defer c.running.Store(false)
	info, err := c.phoneNumber(ctx, "")
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("whatsapp: check phone number %s: %w", c.opts.PhoneNumberID, err)
	}
	c.log.Info("whatsapp: receiving webhook deliveries", "number", info.DisplayPhoneNumber, "name", info.VerifiedName, "path", WebhookPath)
	c.sinkMu.Lock()
	c.sink = sink
	c.sinkMu.Unlock()
	c.ready.Store(true)
	<-ctx.Done()
	c.ready.Store(false)
	c.sinkMu.Lock()
	c.sink = nil
	c.sinkMu.Unlock()
	return nil
}

// phoneInfo is GET /{phone-number-id}'s answer.
type phoneInfo struct {
	ID                 string `json:"id"`
	DisplayPhoneNumber string `json:"display_phone_number"`
	VerifiedName       string `json:"verified_name"`
	QualityRating      string `json:"quality_rating"`
}

// phoneNumber reads the phone number's record. proof, when set, is sent as
// appsecret_proof (doctor: the app secret checked against the server).
func (c *Adapter) phoneNumber(ctx context.Context, proof string) (phoneInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	u := c.base + "/" + pathEscape(c.opts.PhoneNumberID) + "?fields=display_phone_number,verified_name,quality_rating"
	if proof != "" {
		u += "&appsecret_proof=" + proof
	}
	var info phoneInfo
	if err := c.getJSON(ctx, u, &info); err != nil {
		return phoneInfo{}, err
	}
	return info, nil
}

// lastReceived returns the chat's last received message id.
func (c *Adapter) lastReceived(chat string) string {
	c.lastMu.Lock()
	defer c.lastMu.Unlock()
	return c.last[chat]
}

func (c *Adapter) setLastReceived(chat, id string) {
	c.lastMu.Lock()
	defer c.lastMu.Unlock()
	if len(c.last) >= 100000 { // bounded: typing is best effort
		clear(c.last)
	}
	c.last[chat] = id
}
