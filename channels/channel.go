package channels

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Sink receives inbound messages from an adapter. Handle returns once the message
// is durably recorded (or deliberately dropped); only then may the adapter
// acknowledge the platform (Slack envelope ack, Telegram offset). A non-nil error
// means "not persisted": the adapter must not acknowledge, so the platform
// redelivers.
type Sink interface {
	Handle(ctx context.Context, msg Message) error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(ctx context.Context, msg Message) error

// Handle calls f.
func (f SinkFunc) Handle(ctx context.Context, msg Message) error { return f(ctx, msg) }

// Outgoing is one chunk, already converted to the platform's markup and under
// its length limit.
type Outgoing struct {
	Target  Target
	Text    string // platform markup (Telegram HTML, Slack mrkdwn, Discord Markdown)
	Plain   string // the same chunk as plain text, for platforms that reject bad markup
	ReplyTo string // platform message id to reply to / thread under, optional
	// Nonce is a stable id for this chunk (turn + index) that adapters may pass
	// to the platform for idempotency (Discord's nonce) or use to look the
	// message up after an ambiguous failure.
	Nonce string
	// Paced is set when the sender already waited for the channel's send
	// slot (Pacer.WaitSendSlot): Send must not wait again.
	Paced bool
}

// Pacer is implemented by channels that pace their sends. Outbound waits for
// the slot before it records a send intent, so the window between intent and
// receipt — the only place a crash can cause a duplicate — spans the
// platform call alone, not the wait in the pacing queue.
type Pacer interface {
	WaitSendSlot(ctx context.Context, target Target) error
}

// Chunk is one piece of a formatted answer.
type Chunk struct {
	Text  string // platform markup
	Plain string // plain-text fallback
}

// Channel is what every platform adapter implements.
type Channel interface {
	// Name is the channel's address prefix: "telegram", "discord", "slack", "console".
	Name() string
	// Run connects and pushes inbound messages into sink until ctx is canceled
	// (returns nil) or the connection fails in a way the adapter cannot repair
	// itself (returns an error; the supervisor restarts it with backoff).
	Run(ctx context.Context, sink Sink) error
	// Send delivers one chunk and returns the platform's message id. Errors
	// should be classified with RateLimited / Temporary / Permanent / Ambiguous.
	Send(ctx context.Context, out Outgoing) (string, error)
	// Format converts the model's Markdown to the platform's markup and splits it
	// into chunks under the platform's limit without breaking code fences.
	Format(markdown string) []Chunk
}

// Typer is implemented by channels that can show a typing indicator.
// StartTyping keeps the indicator alive until stop is called; stop is
// idempotent and never blocks for long. Errors are logged by the adapter,
// never returned: a failing typing call must not fail the reply.
type Typer interface {
	StartTyping(ctx context.Context, target Target) (stop func())
}

// QuickAnswer is how long a turn runs before the user is shown that the bot
// is working on it: a platform's typing indicator (an adapter's StartTyping
// waits this long before its first call) and a streamed answer's first draft
// or preview (outbound.StreamFirstShow). An answer ready sooner — a command,
// a quick model — goes out as one message with nothing before it: the
// indicator would only flash, and each call counts against the platform's
// rate limits.
const QuickAnswer = 300 * time.Millisecond

// Editor is implemented by channels that can edit a sent message in place; the
// shared streaming path uses it to grow a reply as text arrives.
type Editor interface {
	Edit(ctx context.Context, target Target, messageID string, text string) error
	// EditInterval is the minimum time between two edits of one chat.
	EditInterval() time.Duration
}

// Readiness is implemented by channels that can tell whether they are connected.
type Readiness interface {
	Ready() bool
}

// SendErrorKind classifies a delivery failure for the shared retry path.
type SendErrorKind int

const (
	// KindTemporary errors are retried with backoff (5xx, timeouts before sending).
	KindTemporary SendErrorKind = iota + 1
	// KindRateLimited errors are retried after RetryAfter.
	KindRateLimited
	// KindPermanent errors are never retried (403 blocked, 400 bad request).
	KindPermanent
	// KindAmbiguous means the request may have reached the platform (transport
	// failure after the request was written). It is not blindly retried.
	KindAmbiguous
)

func (k SendErrorKind) String() string {
	switch k {
	case KindTemporary:
		return "temporary"
	case KindRateLimited:
		return "rate_limited"
	case KindPermanent:
		return "permanent"
	case KindAmbiguous:
		return "ambiguous"
	}
	return "unknown"
}

// SendError is a classified delivery error.
type SendError struct {
	Kind       SendErrorKind
	RetryAfter time.Duration // for KindRateLimited
	Err        error
}

func (e *SendError) Error() string {
	if e.Kind == KindRateLimited {
		return fmt.Sprintf("%s (retry after %s): %v", e.Kind, e.RetryAfter, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Kind, e.Err)
}

func (e *SendError) Unwrap() error { return e.Err }

// RateLimited wraps err as a rate-limit error that may be retried after d.
func RateLimited(d time.Duration, err error) error {
	return &SendError{Kind: KindRateLimited, RetryAfter: d, Err: err}
}

// Temporary wraps err as a retryable error.
func Temporary(err error) error { return &SendError{Kind: KindTemporary, Err: err} }

// Permanent wraps err as an error that must not be retried.
func Permanent(err error) error { return &SendError{Kind: KindPermanent, Err: err} }

// Ambiguous wraps err as an error after which the message may or may not exist.
func Ambiguous(err error) error { return &SendError{Kind: KindAmbiguous, Err: err} }

// ClassifyError returns the kind of err; unclassified errors are temporary.
func ClassifyError(err error) (SendErrorKind, time.Duration) {
	var se *SendError
	if errors.As(err, &se) {
		return se.Kind, se.RetryAfter
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return KindPermanent, 0
	}
	return KindTemporary, 0
}

// Webhook is implemented by channels that receive events over HTTP (Telegram
// webhook mode, Slack Events API). The daemon mounts the handler on
// server.listen at Pattern (e.g. "POST /webhooks/telegram").
type Webhook interface {
	WebhookPattern() string
	WebhookHandler() http.Handler
}

// DeltaWriter is implemented by channels that show raw text deltas as they
// arrive (a terminal) instead of editing a message. The final answer is still
// delivered with Send; the channel knows what it already showed.
type DeltaWriter interface {
	WriteDelta(target Target, text string)
	ResetDelta(target Target)
}

// DirectTeller is implemented by channels that can tell whether a chat is a
// direct (one-to-one) chat from its address, as Message.Direct says of its
// messages: the heartbeat greets only direct chats (heartbeat.targets empty),
// never a group or channel where someone once mentioned the bot.
type DirectTeller interface {
	IsDirect(ctx context.Context, target Target) (bool, error)
}

// Verifier is implemented by channels that can tell whether a chunk whose
// send has an intent but no receipt (the process died during the platform
// call) reached the platform after all, e.g. by reading the conversation's
// history. The outbound path asks before resending; found means "do not
// resend", and id is the platform's message id.
type Verifier interface {
	Delivered(ctx context.Context, out Outgoing, since time.Time) (id string, found bool, err error)
}

// ErrNoPreviews is what Previewer.Preview returns when the platform turns out
// not to support previews after all (an older self-hosted server that does not
// know the method). The caller streams by edits instead; the channel answers
// false from Previews for the rest of the process.
var ErrNoPreviews = errors.New("previews are not supported by this server")

// Previewer is implemented by channels that can show an answer while it is
// being written as an ephemeral preview that never becomes a message
// (Telegram's sendMessageDraft in private chats). Where Previews says yes, the
// shared streaming path previews instead of sending a draft message and
// editing it: a crash mid-answer then leaves nothing in the chat, and the
// answer is sent once, at the end, with Send.
type Previewer interface {
	// Previews reports, without a platform call, whether target can show
	// previews.
	Previews(target Target) bool
	// Preview shows text (platform markup, one chunk) as preview draftID in
	// target; a later call with the same draftID replaces it. It returns
	// ErrNoPreviews (wrapped) when the server does not support previews.
	Preview(ctx context.Context, target Target, draftID int64, text string) error
}

// Admitter is implemented by sinks that can tell, before any message,
// whether a user may talk to the bot: a platform where the bot is invited
// into a conversation first (a Matrix invite) asks it whether to accept.
// Access stays the handler's decision; the adapter only acts on the answer.
// direct says the invitation is to a one-to-one chat: it is then answered
// as a direct message from the user would be (in pairing mode a stranger is
// admitted, to receive a pairing code); otherwise as a mention in a group.
type Admitter interface {
	Admits(ctx context.Context, channel, userID string, direct bool) (bool, error)
}

// OutgoingFile is one file to deliver as an attachment (send_file): the
// bytes of a workspace file, its name and type, and an optional caption.
type OutgoingFile struct {
	Target  Target
	Name    string // the file name the chat shows ("report.pdf")
	Path    string // its path in the chat's workspace ("reports/report.pdf")
	MIME    string // the content type ("application/pdf"); never empty
	Data    []byte
	Caption string // plain text, optional
	// Nonce is a stable id for this file's delivery (turn + file index),
	// for platforms that deduplicate by one (Discord's nonce, Matrix's
	// transaction id).
	Nonce   string
	ReplyTo string // platform message id to reply to / thread under, optional
}

// FileSender is implemented by channels that can deliver a file as an
// attachment. SendFile returns the platform's message id; errors are
// classified like Send's. MaxFileSize is the largest file the platform
// accepts from the bot, in bytes (0: no limit); the shared delivery path
// refuses larger files with a message in the chat instead of calling
// SendFile.
type FileSender interface {
	SendFile(ctx context.Context, f OutgoingFile) (string, error)
	MaxFileSize() int64
}

// VoiceSender is implemented by channels that can deliver a voice note (an
// OGG/Opus file shown as a playable voice message; Telegram's sendVoice).
// The shared delivery path sends an answer as a voice note too, after its
// text, when the chat spoke (sent a voice note) and media.speech is set;
// f.Data is OGG/Opus, f.Name and f.MIME name it. SendVoice returns the
// platform's message id; errors are classified like Send's.
type VoiceSender interface {
	SendVoice(ctx context.Context, f OutgoingFile) (string, error)
}
