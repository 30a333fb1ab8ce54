// Package email is Switchboard's email adapter: it reads the bot's mailbox
// over IMAP (github.com/emersion/go-imap/v2's client: IDLE, polling where
// the server has no IDLE) and answers by SMTP submission
// (github.com/emersion/go-smtp's client). It owns the IMAP cursor, the
// normalization of a mail into channels.Message (threading, the checks that
// keep mail loops and forged senders out, text and attachments) and the
// composition and submission of replies. Everything that must behave the
// same on every platform — dedup, access control, pairing, the durable
// inbox, commands, retries, the outbox — is the shared handler's job
// (channels/hub), not this package's. It imports only channels,
// channels/platform and channels/markup of the project.
//
// Files: adapter.go (Options, New, Run: connect, catch up, wait, reconnect),
// mailbox.go (the IMAP session: login, select, cursor, fetch, IDLE/poll),
// inbound.go (a fetched mail → channels.Message), filter.go (loops,
// bounces, lists, the bot's own mail, Authentication-Results), send.go
// (Format, Send: MIME composition and SMTP submission), files.go
// (SendFile: send_file's attachments), platform.go (the registry's
// descriptor and config section), doctor.go (doctor's checks).
//
// Design decisions:
//
//   - Cursor. The mailbox's UIDVALIDITY and the next UID to read are the
//     durable cursor (Deps.KV, one key per account and mailbox). It moves
//     past a mail only after sink.Handle returned nil for it (or the mail was
//     deliberately dropped), so a crash or a failed Handle reads that mail
//     again; the handler's persisted dedup (by Message-ID) drops the repeat.
//     On the very first start the cursor is UIDNEXT: the backlog already in
//     the mailbox is never answered, only mail that arrives afterwards. When
//     UIDVALIDITY changes (the mailbox was recreated) the old UIDs mean
//     nothing: reading resumes at the first mail filed at or after the
//     INTERNALDATE of the last one read (kept in the cursor; the handler's
//     dedup drops a mail read twice), and a warning says so.
//     Mail is read with BODY.PEEK, so the \Seen flag is left to people.
//   - Waiting. IDLE when the server offers it (re-issued every few minutes,
//     well within the 29 minutes RFC 2177 allows, as a safety net also
//     against servers that lose an EXISTS), NOOP polling every
//     Options.PollInterval otherwise. A lost connection is reconnected with
//     backoff (500 ms doubling to 30 s) inside Run; Run returns an error
//     only when the server rejects the login or the mailbox (the daemon's
//     supervisor then restarts it with its own backoff and logs why).
//   - Chat, thread, session. Email is always a direct chat (Message.Direct
//     true, Mentioned false: there is no mention in mail; a mail with
//     several recipients is still answered to its sender alone). ChatID is
//     the sender's address (lower case), so `email:ops@example.com` — the
//     target jobs and reminders deliver to, and personas.by_target binds —
//     names a person; ThreadID is the thread's root Message-ID (the first of
//     References, else In-Reply-To, else the mail's own Message-ID, without
//     the angle brackets; one that is not a plain token is replaced by a
//     hash), so each thread is its own session
//     (`email:ops@example.com:<root-id>`). A delivery to an address without
//     a thread starts a new thread. The sender is part of the session key,
//     so a mail quoting someone else's thread in its References cannot join
//     that person's session.
//   - Sender.ID is the From address, lower case — but only for mail the
//     adapter can attribute: with require_auth_results (the default) a mail
//     counts as from its From address only when the topmost
//     Authentication-Results header carrying the configured authserv-id (the
//     receiving server's; any other such header is ignored, as a sender can
//     write one) says dmarc=pass, or dkim=pass for a signing domain aligned
//     with the From domain. Mail that fails is not handed to the handler at
//     all, and one warning line is logged: an unattributable sender has no
//     identity the handler's access policy could judge, and even a pairing
//     code sent back would go to whoever was impersonated (backscatter).
//   - No mail loops. Never answered, dropped before the sink with a debug
//     line: the bot's own address in From; Auto-Submitted other than "no"
//     (RFC 3834); Precedence bulk, junk or list; a List-Id header; an empty
//     Return-Path (<>, bounces); MAILER-DAEMON or postmaster senders;
//     delivery and disposition reports (multipart/report). The bot's own
//     mail carries Auto-Submitted: auto-replied (answers) or auto-generated
//     (deliveries without a thread), so other well-behaved responders stay
//     quiet too.
//   - Message ids. Message.MessageID is the Message-ID without brackets
//     (stable when the same mail is filed twice), or "uid-<validity>-<uid>"
//     for a mail without one. Send returns the Message-ID it gave the reply.
//   - Text. The text/plain part, else the text/html part as text; the
//     quoted previous message at the end of a reply ("On … wrote:" and its
//     "> " lines) and a "-- " signature are cut. A mail with no body text is
//     its Subject. Text is bounded (Options.MaxText), like every part.
//   - Attachments are bounded before download: sizes come from
//     BODYSTRUCTURE, a part larger than Options.MaxAttachment (or beyond
//     Options.MaxMedia in total) is never fetched and the message says so
//     in a line of its text; the mail is answered without it.
//   - Replies. One mail per answer (Format splits only beyond ChunkLimit,
//     far above any real answer, so a pathological one is a few mails in
//     the same thread): text/plain and a text/html alternative rendered
//     from the Markdown by channels/markup (raw HTML in it is escaped,
//     never passed through), "Re: <subject>", In-Reply-To and References
//     (the root and the last ten ids) from the thread. The Message-ID is
//     derived from Outgoing.Nonce and a random salt kept in Deps.KV (turn
//     ids start again in a fresh data directory and are alike in every bot;
//     a reused Message-ID would make mail stores drop the new mail), so a
//     resend after a crash, or from another replica, carries the same
//     Message-ID as the first attempt (receiving stores that drop duplicate
//     Message-IDs drop it). There is no streaming, no editing and
//     no typing in mail; the answer is sent once, at the end.
//   - Files (send_file, channels.FileSender): each file is a mail of its
//     own in the thread, threaded and Message-ID'd like an answer
//     (multipart/mixed: the caption as text with an escaped HTML
//     alternative, the file as a base64 attachment under its name; HTML and
//     SVG go as application/octet-stream, never rendered in the mail), at
//     most Options.MaxFileSize (17 MiB: 1.37 times that in base64 stays
//     within the common 25 MB limit of a mail). See files.go.
//   - Transport security: imaps:// and smtps:// are implicit TLS; imap://
//     and smtp:// require STARTTLS except on a loopback host, where plain
//     text is allowed (a local relay or the tests). Credentials never
//     appear in logs or errors.
//   - Replicas: receiving runs under the cluster lease "email-imap"
//     (Descriptor.Runners), so one replica reads the mailbox; every replica
//     can send.
package email

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/platform"
)

// Name is the channel's address prefix.
const Name = "email"

// Options configures an Adapter. Zero values take the defaults shown.
type Options struct {
	Address string // the bot's address (From of its mail); required

	IMAPURL      string // imaps://host:993 | imap://host:143; required
	IMAPUsername string // default Address
	IMAPPassword string // never logged
	Mailbox      string // default INBOX

	SMTPURL      string // smtps://host:465 | smtp://host:587; required
	SMTPUsername string // default Address
	SMTPPassword string // never logged

	// RequireAuthResults trusts a sender only on a passing DMARC (or aligned
	// DKIM) verdict of AuthServID in Authentication-Results.
	RequireAuthResults bool
	AuthServID         string

	// KV keeps the IMAP cursor and the threads' subjects and references;
	// nil keeps them in memory (tests).
	KV     platform.KV
	Logger *slog.Logger

	PollInterval  time.Duration // NOOP polling without IDLE; default 30s
	IdleRestart   time.Duration // IDLE re-issued after; default 10m
	MaxText       int           // bytes of a mail's text part read; default 256 KiB
	MaxAttachment int64         // largest attachment fetched; default 10 MiB
	MaxMedia      int64         // attachments of one mail in total; default 25 MiB
	MaxFileSize   int64         // largest file send_file mails; default DefaultMaxFileSize (files.go)
	Timeout       time.Duration // per IMAP/SMTP command round; default 60s
	RetryMin      time.Duration // first reconnect backoff; default 500ms
	RetryMax      time.Duration // longest; default 30s
	TLSConfig     *tls.Config   // nil = system roots
	Now           func() time.Time

	noIdle bool // poll even when the server has IDLE (tests of the fallback)
}

func (o *Options) defaults() error {
	if o.Address == "" {
		return errors.New("email: the bot's address is required")
	}
	a, err := mail.ParseAddress(o.Address)
	if err != nil {
		return fmt.Errorf("email: address %q: %w", platform.Truncate(o.Address, 80), err)
	}
	o.Address = strings.ToLower(a.Address)
	if _, err := parseServerURL(o.IMAPURL, "imaps", "imap"); err != nil {
		return fmt.Errorf("email: imap.url: %w", err)
	}
	if _, err := parseServerURL(o.SMTPURL, "smtps", "smtp"); err != nil {
		return fmt.Errorf("email: smtp.url: %w", err)
	}
	if o.RequireAuthResults && o.AuthServID == "" {
		return errors.New("email: require_auth_results needs authserv_id (the receiving server's authserv-id)")
	}
	if o.IMAPUsername == "" {
		o.IMAPUsername = o.Address
	}
	if o.SMTPUsername == "" {
		o.SMTPUsername = o.Address
	}
	if o.Mailbox == "" {
		o.Mailbox = "INBOX"
	}
	if o.KV == nil {
		o.KV = &memKV{m: map[string][]byte{}}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&o.PollInterval, 30*time.Second)
	set(&o.IdleRestart, 10*time.Minute)
	set(&o.Timeout, 60*time.Second)
	set(&o.RetryMin, 500*time.Millisecond)
	set(&o.RetryMax, 30*time.Second)
	if o.MaxText <= 0 {
		o.MaxText = 256 << 10
	}
	if o.MaxAttachment <= 0 {
		o.MaxAttachment = 10 << 20
	}
	if o.MaxMedia <= 0 {
		o.MaxMedia = 25 << 20
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// Adapter is the email channel.
type Adapter struct {
	opts  Options
	log   *slog.Logger
	ready atomic.Bool
	// running serializes Run: one IMAP session at a time per adapter.
	running sync.Mutex

	saltMu  sync.Mutex
	saltVal string // the Message-ID salt (send.go)
}

// New builds an adapter; it does not connect (Run does).
func New(opts Options) (*Adapter, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	return &Adapter{opts: opts, log: opts.Logger.With("channel", Name)}, nil
}

// Name implements channels.Channel.
func (a *Adapter) Name() string { return Name }

// Ready reports whether the mailbox is selected and being watched.
func (a *Adapter) Ready() bool { return a.ready.Load() }

// IsDirect implements channels.DirectTeller: every email chat is direct.
func (a *Adapter) IsDirect(context.Context, channels.Target) (bool, error) { return true, nil }

// errFatal marks a session error that reconnecting will not cure (the
// server rejected the login or the mailbox): Run returns it.
type errFatal struct{ err error }

func (e errFatal) Error() string { return e.err.Error() }
func (e errFatal) Unwrap() error { return e.err }

// Run reads the mailbox until ctx ends, handing new mail to sink.
func (a *Adapter) Run(ctx context.Context, sink channels.Sink) error {
	a.running.Lock()
	defer a.running.Unlock()
	defer a.ready.Store(false)
	backoff := a.opts.RetryMin
	for {
		progressed, err := a.session(ctx, sink)
		a.ready.Store(false)
		if ctx.Err() != nil {
			return nil
		}
		var fatal errFatal
		if errors.As(err, &fatal) {
			return err
		}
		if progressed {
			backoff = a.opts.RetryMin
		}
		a.log.Warn("email: IMAP session ended; reconnecting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, a.opts.RetryMax)
	}
}

// memKV is the in-memory KV of an adapter built without one.
type memKV struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (k *memKV) KVGet(_ context.Context, key string) ([]byte, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[key]
	return append([]byte(nil), v...), ok, nil
}

func (k *memKV) KVPut(_ context.Context, key string, val []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[key] = append([]byte(nil), val...)
	return nil
}
