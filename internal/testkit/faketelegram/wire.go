package faketelegram

import "encoding/json"

// The types below are the Bot API's JSON objects (https://core.telegram.org/bots/api),
// written independently of any client library so that the fake checks the
// client against the documented shapes rather than against itself. Only the
// fields the fake produces or reads are declared.

// User is https://core.telegram.org/bots/api#user.
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name,omitempty"`
	Username  string `json:"username,omitempty"`
}

// Chat is https://core.telegram.org/bots/api#chat.
type Chat struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"` // private | group | supergroup | channel
	Title     string `json:"title,omitempty"`
	Username  string `json:"username,omitempty"`
	FirstName string `json:"first_name,omitempty"`
	IsForum   bool   `json:"is_forum,omitempty"`
}

// MessageEntity is https://core.telegram.org/bots/api#messageentity. Offset and
// Length are in UTF-16 code units.
type MessageEntity struct {
	Type     string `json:"type"`
	Offset   int    `json:"offset"`
	Length   int    `json:"length"`
	URL      string `json:"url,omitempty"`
	User     *User  `json:"user,omitempty"`
	Language string `json:"language,omitempty"`
}

// PhotoSize is https://core.telegram.org/bots/api#photosize.
type PhotoSize struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	Width        int    `json:"width"`
	Height       int    `json:"height"`
	FileSize     int    `json:"file_size,omitempty"`
}

// Document is https://core.telegram.org/bots/api#document.
type Document struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	FileName     string `json:"file_name,omitempty"`
	MimeType     string `json:"mime_type,omitempty"`
	FileSize     int64  `json:"file_size,omitempty"`
}

// ForumTopicCreated is https://core.telegram.org/bots/api#forumtopiccreated.
type ForumTopicCreated struct {
	Name      string `json:"name"`
	IconColor int    `json:"icon_color"`
}

// Message is https://core.telegram.org/bots/api#message.
type Message struct {
	MessageID         int                `json:"message_id"`
	MessageThreadID   int                `json:"message_thread_id,omitempty"`
	From              *User              `json:"from,omitempty"`
	SenderChat        *Chat              `json:"sender_chat,omitempty"`
	Date              int64              `json:"date"`
	Chat              Chat               `json:"chat"`
	IsTopicMessage    bool               `json:"is_topic_message,omitempty"`
	ReplyToMessage    *Message           `json:"reply_to_message,omitempty"`
	EditDate          int64              `json:"edit_date,omitempty"`
	Text              string             `json:"text,omitempty"`
	Entities          []MessageEntity    `json:"entities,omitempty"`
	Caption           string             `json:"caption,omitempty"`
	CaptionEntities   []MessageEntity    `json:"caption_entities,omitempty"`
	Photo             []PhotoSize        `json:"photo,omitempty"`
	Document          *Document          `json:"document,omitempty"`
	Voice             *Voice             `json:"voice,omitempty"`
	Audio             *Audio             `json:"audio,omitempty"`
	ForumTopicCreated *ForumTopicCreated `json:"forum_topic_created,omitempty"`
	NewChatMembers    []User             `json:"new_chat_members,omitempty"`
	MigrateToChatID   int64              `json:"migrate_to_chat_id,omitempty"`

	// Extra carries fields the struct does not model (forward_origin,
	// reply_markup, …) verbatim; see WithFields.
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON writes the message with its Extra fields inlined.
func (m Message) MarshalJSON() ([]byte, error) {
	type plain Message
	b, err := json.Marshal(plain(m))
	if err != nil {
		return nil, err
	}
	return inline(b, m.Extra)
}

// Update is https://core.telegram.org/bots/api#update. Extra carries update
// kinds the struct does not model (callback_query, …) verbatim.
type Update struct {
	UpdateID      int64    `json:"update_id"`
	Message       *Message `json:"message,omitempty"`
	EditedMessage *Message `json:"edited_message,omitempty"`
	ChannelPost   *Message `json:"channel_post,omitempty"`

	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON writes the update with its Extra fields inlined.
func (u Update) MarshalJSON() ([]byte, error) {
	type plain Update
	b, err := json.Marshal(plain(u))
	if err != nil {
		return nil, err
	}
	return inline(b, u.Extra)
}

// inline adds extra's fields to the JSON object b.
func inline(b []byte, extra map[string]json.RawMessage) ([]byte, error) {
	if len(extra) == 0 {
		return b, nil
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range extra {
		m[k] = v
	}
	return json.Marshal(m)
}

// File is https://core.telegram.org/bots/api#file.
type File struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	FileSize     int64  `json:"file_size,omitempty"`
	FilePath     string `json:"file_path,omitempty"`
}

// BotCommand is https://core.telegram.org/bots/api#botcommand.
type BotCommand struct {
	Command     string `json:"command"`
	Description string `json:"description"`
}

// ReplyParameters is https://core.telegram.org/bots/api#replyparameters.
type ReplyParameters struct {
	MessageID                int             `json:"message_id"`
	ChatID                   json.RawMessage `json:"chat_id,omitempty"`
	AllowSendingWithoutReply bool            `json:"allow_sending_without_reply,omitempty"`
}

// ResponseParameters is https://core.telegram.org/bots/api#responseparameters.
type ResponseParameters struct {
	MigrateToChatID int64 `json:"migrate_to_chat_id,omitempty"`
	RetryAfter      int   `json:"retry_after,omitempty"`
}

// envelope is the response wrapper every method answers with.
type envelope struct {
	OK          bool                `json:"ok"`
	Result      any                 `json:"result,omitempty"`
	ErrorCode   int                 `json:"error_code,omitempty"`
	Description string              `json:"description,omitempty"`
	Parameters  *ResponseParameters `json:"parameters,omitempty"`
}

// WebhookInfo is https://core.telegram.org/bots/api#webhookinfo.
type WebhookInfo struct {
	URL                string `json:"url"`
	HasCustomCert      bool   `json:"has_custom_certificate"`
	PendingUpdateCount int    `json:"pending_update_count"`
}
