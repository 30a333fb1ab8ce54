// Package channels is the contract between the chat platforms and the rest
// of Switchboard: the normalized Message an adapter pushes in (and its
// Target address), the Sink it pushes into (and Admitter, a sink's answer
// to whether a user may talk to the bot, for platforms with invitations),
// the Channel interface every adapter implements with its optional
// capabilities (Typer, Editor, DeltaWriter, Pacer, Verifier, DirectTeller,
// Readiness, Webhook), the Outgoing chunks an adapter sends (and the
// Purpose a scheduled delivery's context carries, WithPurpose), the send-error
// kinds the shared retry path understands (ClassifyError), target and
// user-id syntax (ParseTarget, CheckTarget, CheckUserID; a server-qualified
// chat id such as "!abc:example.org" may hold ':'; the known platform names
// are the caller's, from the registry in channels/platform: this package
// lists none), and the access policy's types with its pure Decide.
//
// It imports nothing of this module, so an adapter (channels/telegram,
// channels/discord, channels/slack, channels/console) never compiles the
// agent, the store or the shared handler. What must behave the same on every
// platform — dedup, access control, the durable inbox, per-session order,
// commands, retries, delivery — is done by the shared handler in
// channels/hub, never in an adapter.
package channels

import (
	"strings"
	"time"
)

// Sender is who wrote a message.
type Sender struct {
	ID    string `json:"id"`
	Name  string `json:"name,omitempty"`
	IsBot bool   `json:"is_bot,omitempty"`
}

// Media is an attachment the adapter already downloaded (size-capped).
type Media struct {
	MIME string `json:"mime"`
	Name string `json:"name,omitempty"`
	Data []byte `json:"data,omitempty"`
}

// Message is one inbound platform message, normalized.
type Message struct {
	Channel   string  `json:"channel"`             // "telegram", "discord", "slack", "console"
	ChatID    string  `json:"chat_id"`             // platform chat / channel id
	ThreadID  string  `json:"thread_id,omitempty"` // forum topic, thread ts, thread channel
	MessageID string  `json:"message_id"`          // unique within Channel; dedup key
	Sender    Sender  `json:"sender"`
	Text      string  `json:"text"`
	Media     []Media `json:"media,omitempty"`
	// Direct is true for one-to-one chats (DMs, private chats).
	Direct bool `json:"direct,omitempty"`
	// Mentioned is true when the bot was @mentioned or the message replies to the bot.
	// The adapter strips the mention from Text.
	Mentioned bool `json:"mentioned,omitempty"`
	// ReplyTo is the platform id of the message this one replies to, if any.
	ReplyTo string `json:"reply_to,omitempty"`
	// Quote is the text of the message this one replies to, when the
	// platform includes it. The handler gives it to the model wrapped as
	// untrusted content (it may be another user's words).
	Quote *Quote `json:"quote,omitempty"`
	// FromSelf is true for the bot's own messages (adapters may drop them earlier).
	FromSelf bool      `json:"from_self,omitempty"`
	Time     time.Time `json:"time"`
	// ParentID records the parent channel of a thread where the platform has one
	// (Discord threads); informational.
	ParentID string `json:"parent_id,omitempty"`
}

// Quote is a replied-to message as the platform showed it.
type Quote struct {
	Author  string `json:"author,omitempty"`
	Text    string `json:"text"`
	FromBot bool   `json:"from_bot,omitempty"` // the bot's own earlier message
}

// Target is the session key and delivery address of the message's chat:
// "<channel>:<chat_id>[:<thread_id>]".
func (m Message) Target() Target {
	return Target{Channel: m.Channel, ChatID: m.ChatID, ThreadID: m.ThreadID}
}

// UserKey is the sender's address as used in allowlists and admin lists:
// "<channel>:user:<id>".
func (m Message) UserKey() string { return m.Channel + ":user:" + m.Sender.ID }

// Target is a chat address. Its string form is the session key.
type Target struct {
	Channel  string
	ChatID   string
	ThreadID string
}

// String renders "<channel>:<chat_id>[:<thread_id>]".
func (t Target) String() string {
	s := t.Channel + ":" + t.ChatID
	if t.ThreadID != "" {
		s += ":" + t.ThreadID
	}
	return s
}

// ParseTarget parses "<channel>:<chat_id>[:<thread_id>]". A chat id has no
// ':' unless it is server-qualified (splitAddress): "matrix:!abc:example.org"
// is chat "!abc:example.org", "matrix:!abc:example.org:$ev" its thread "$ev".
func ParseTarget(s string) (Target, bool) {
	parts := splitAddress(s)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" || parts[1] == "user" {
		return Target{}, false
	}
	t := Target{Channel: parts[0], ChatID: parts[1]}
	if len(parts) == 3 {
		if parts[2] == "" {
			return Target{}, false
		}
		t.ThreadID = parts[2]
	}
	return t, true
}

// splitAddress splits a target address into channel, chat id and (when
// present) thread id. The rule is the platforms' id syntax, not a list of
// platforms: a chat id starting with '!' is server-qualified, the federated
// form "!local:server" where server is a host name, an IPv4 address or a
// bracketed IPv6 literal with an optional numeric port ("!abc:example.org",
// "!abc:example.org:8448", "!abc:[::1]:8448"); what follows it is the
// thread. Any other chat id ends at the next ':' as before. A '!' id without
// its ":server" part is left to the caller's checks as it is.
func splitAddress(s string) []string {
	channel, rest, ok := strings.Cut(s, ":")
	if !ok {
		return []string{s}
	}
	if !strings.HasPrefix(rest, "!") {
		return append([]string{channel}, strings.SplitN(rest, ":", 2)...)
	}
	local, after, ok := strings.Cut(rest, ":")
	if !ok {
		return []string{channel, rest}
	}
	n := len(local) + 1 // chat id so far: "!local:"
	if strings.HasPrefix(after, "[") {
		if end := strings.IndexByte(after, ']'); end >= 0 {
			n += end + 1
		} else {
			n += len(after)
		}
	}
	// The host (or whatever follows a bracketed literal) ends at a ':'.
	if i := strings.IndexByte(rest[n:], ':'); i >= 0 {
		n += i
	} else {
		n = len(rest)
	}
	// An optional port: digits up to the next ':' or the end.
	if n < len(rest) && rest[n] == ':' {
		port, _, _ := strings.Cut(rest[n+1:], ":")
		if port != "" && strings.Trim(port, "0123456789") == "" {
			n += 1 + len(port)
		}
	}
	if n >= len(rest) {
		return []string{channel, rest}
	}
	return []string{channel, rest[:n], rest[n+1:]}
}
