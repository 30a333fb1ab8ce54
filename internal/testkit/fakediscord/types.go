package fakediscord

import (
	"encoding/json"
	"time"
)

// Wire types. These follow Discord's documented JSON field names (and were
// checked against discordgo v0.29.0's structs so the real client decodes them).

// User is a Discord user object.
type User struct {
	ID            string `json:"id"`
	Username      string `json:"username"`
	GlobalName    string `json:"global_name,omitempty"`
	Discriminator string `json:"discriminator"`
	Bot           bool   `json:"bot,omitempty"`
}

// Member is the partial guild member attached to guild messages.
type Member struct {
	Nick     string   `json:"nick,omitempty"`
	Roles    []string `json:"roles"`
	JoinedAt string   `json:"joined_at"`
}

// Attachment is a message attachment object.
type Attachment struct {
	ID          string `json:"id"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type,omitempty"`
	Size        int    `json:"size"`
	URL         string `json:"url"`
	ProxyURL    string `json:"proxy_url"`
}

// MessageReference is Discord's message_reference object.
type MessageReference struct {
	Type            int    `json:"type,omitempty"`
	MessageID       string `json:"message_id,omitempty"`
	ChannelID       string `json:"channel_id,omitempty"`
	GuildID         string `json:"guild_id,omitempty"`
	FailIfNotExists *bool  `json:"fail_if_not_exists,omitempty"`
}

// AllowedMentions is the allowed_mentions object of a create/edit request.
type AllowedMentions struct {
	Parse       []string `json:"parse"`
	Users       []string `json:"users,omitempty"`
	Roles       []string `json:"roles,omitempty"`
	RepliedUser bool     `json:"replied_user"`
}

// Message is a Discord message object.
type Message struct {
	ID                string            `json:"id"`
	Type              int               `json:"type"`
	ChannelID         string            `json:"channel_id"`
	GuildID           string            `json:"guild_id,omitempty"`
	Author            User              `json:"author"`
	Member            *Member           `json:"member,omitempty"`
	Content           string            `json:"content"`
	Timestamp         string            `json:"timestamp"`
	EditedTimestamp   *string           `json:"edited_timestamp"`
	TTS               bool              `json:"tts"`
	MentionEveryone   bool              `json:"mention_everyone"`
	Mentions          []User            `json:"mentions"`
	MentionRoles      []string          `json:"mention_roles"`
	Attachments       []Attachment      `json:"attachments"`
	Embeds            []json.RawMessage `json:"embeds"`
	Pinned            bool              `json:"pinned"`
	Nonce             string            `json:"nonce,omitempty"`
	MessageReference  *MessageReference `json:"message_reference,omitempty"`
	ReferencedMessage *Message          `json:"referenced_message,omitempty"`
	Flags             int               `json:"flags"`
}

// Channel is a Discord channel object (guild text channel, DM or thread).
type Channel struct {
	ID       string `json:"id"`
	Type     int    `json:"type"`
	GuildID  string `json:"guild_id,omitempty"`
	ParentID string `json:"parent_id,omitempty"`
	Name     string `json:"name,omitempty"`
}

// Channel types used by the fake.
const (
	ChannelTypeGuildText    = 0
	ChannelTypeDM           = 1
	ChannelTypePublicThread = 11
)

// Gateway intents the fake honours when dispatching.
const (
	IntentGuilds         = 1 << 0
	IntentGuildMessages  = 1 << 9
	IntentDirectMessages = 1 << 12
	IntentMessageContent = 1 << 15
)

// Identify is one IDENTIFY (op 2) payload the fake received.
type Identify struct {
	Token      string          `json:"token"`
	Intents    int             `json:"intents"`
	Compress   bool            `json:"compress"`
	Properties json.RawMessage `json:"properties"`
	// Shard is [shard_id, num_shards] when the client shards.
	Shard []int           `json:"shard,omitempty"`
	Raw   json.RawMessage `json:"-"`
}

// Resume is one RESUME (op 6) payload the fake received.
type Resume struct {
	Token     string `json:"token"`
	SessionID string `json:"session_id"`
	Seq       int64  `json:"seq"`
	// Accepted reports whether the fake resumed the session (false: it
	// answered INVALID_SESSION).
	Accepted bool `json:"-"`
}

// Request is one REST request the fake received.
type Request struct {
	Method string
	Path   string
	Query  string
	Body   []byte
	// Authorized reports whether the Authorization header matched the token.
	Authorized bool
	Status     int
	At         time.Time
}

// MessageRequest is a parsed message create (POST) or edit (PATCH) request.
type MessageRequest struct {
	Method           string
	ChannelID        string
	MessageID        string // PATCH target, or the id of the created/returned message
	Content          string
	AllowedMentions  *AllowedMentions
	MessageReference *MessageReference
	Nonce            string
	EnforceNonce     bool
	Status           int
	At               time.Time
	Raw              json.RawMessage
}

// SayOptions shapes a message injected by UserSays.
type SayOptions struct {
	// GuildID makes the message a guild message; empty means a DM.
	GuildID string
	// AuthorName is the username (default "user-<id>").
	AuthorName string
	// Nick is the member nickname in guilds.
	Nick string
	// Bot marks the author as a bot.
	Bot bool
	// ReplyTo is the id of a message in the same channel this one replies to.
	ReplyTo string
	// Attachments are served by the fake under the CDN host
	// (https://cdn.discordapp.com/attachments/...), which the adapter rewrites.
	Attachments []FileSpec
	// Type overrides the message type (0 default, 19 reply).
	Type int
}

// FileSpec describes an attachment the fake serves.
type FileSpec struct {
	Filename    string
	ContentType string
	Data        []byte
	// Size overrides the advertised size (default len(Data)).
	Size int
}

type gatewayPayload struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  *int64          `json:"s"`
	T  *string         `json:"t"`
}
