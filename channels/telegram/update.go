package telegram

import (
	"bytes"
	"encoding/json"

	"github.com/go-telegram/bot/models"
)

// update is what the adapter reads of a Bot API Update: the fields
// normalize, media and the per-chat ordering use, and nothing else.
//
// It is not the library's models.Update on purpose. encoding/json builds
// and caches an encoder for every type reachable from the type it decodes
// into, so the first update decoded into models.Update walked the whole Bot
// API (games, invoices, polls, stories, giveaways, …): about 400 KiB of heap
// held for the life of the process, and type descriptors and field names
// read from all over the binary, which stay resident. Each message also
// allocated the library's 1 KiB Message. Measured on the Telegram-only load
// run (BENCHMARKS.md, "Issue 35, third look"). Unknown fields are skipped
// as before; the small leaf types (User, Chat, MessageEntity, PhotoSize and
// the files) are the library's.
type update struct {
	ID            int64    `json:"update_id"`
	Message       *message `json:"message,omitempty"`
	EditedMessage *message `json:"edited_message,omitempty"`
}

// message is the part of a Bot API Message the adapter reads.
type message struct {
	ID                 int                    `json:"message_id"`
	MessageThreadID    int                    `json:"message_thread_id,omitempty"`
	From               *models.User           `json:"from,omitempty"`
	SenderChat         *models.Chat           `json:"sender_chat,omitempty"`
	Date               int                    `json:"date"`
	Chat               models.Chat            `json:"chat"`
	IsTopicMessage     bool                   `json:"is_topic_message,omitempty"`
	IsAutomaticForward bool                   `json:"is_automatic_forward,omitempty"`
	ReplyToMessage     *message               `json:"reply_to_message,omitempty"`
	ForumTopicCreated  *struct{}              `json:"forum_topic_created,omitempty"` // present or not
	Text               string                 `json:"text,omitempty"`
	Entities           []models.MessageEntity `json:"entities,omitempty"`
	Caption            string                 `json:"caption,omitempty"`
	CaptionEntities    []models.MessageEntity `json:"caption_entities,omitempty"`
	Photo              []models.PhotoSize     `json:"photo,omitempty"`
	Document           *models.Document       `json:"document,omitempty"`
	Voice              *models.Voice          `json:"voice,omitempty"`
	Audio              *models.Audio          `json:"audio,omitempty"`
}

// updateIDOf finds the top-level update_id of an update the adapter's types
// cannot represent, without decoding the rest: a wrong type anywhere, or
// nesting beyond encoding/json's limit (10,000 levels), which refuses the
// whole document. Such an update is confirmed and skipped; without its id
// the offset could not move past it, and it would be fetched forever.
func updateIDOf(raw []byte) (int64, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return 0, false
		}
		if k != "update_id" {
			if skipValue(dec) != nil {
				return 0, false
			}
			continue
		}
		t, err := dec.Token()
		n, ok := t.(json.Number)
		if err != nil || !ok {
			return 0, false
		}
		id, err := n.Int64()
		return id, err == nil && id > 0
	}
	return 0, false
}

// skipValue reads past one value, however deep (Decoder.Token keeps no
// nesting limit).
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
