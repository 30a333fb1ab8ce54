package channels

import (
	"encoding/base64"
	"fmt"

	"github.com/switchboard-bot/switchboard/internal/jsonlite"
)

// AppendJSON appends m as json.Marshal writes it, byte for byte
// (messagejson_test.go compares them): the hub stores every inbound message
// in the inbox this way. json.Marshal's reflection cost ~4 µs a message, and
// its depth made the runtime grow the intake goroutine's stack for each one.
// What json.Marshal refuses (a time RFC 3339 cannot write: a year outside
// 0–9999, a zone offset of 24 hours or more) is an error here too.
func (m *Message) AppendJSON(dst []byte) ([]byte, error) {
	b := append(dst, `{"channel":`...)
	b = jsonlite.AppendString(b, m.Channel)
	b = append(b, `,"chat_id":`...)
	b = jsonlite.AppendString(b, m.ChatID)
	b = optString(b, `,"thread_id":`, m.ThreadID)
	b = append(b, `,"message_id":`...)
	b = jsonlite.AppendString(b, m.MessageID)
	b = append(b, `,"sender":{"id":`...)
	b = jsonlite.AppendString(b, m.Sender.ID)
	b = optString(b, `,"name":`, m.Sender.Name)
	b = optTrue(b, `,"is_bot":true`, m.Sender.IsBot)
	b = append(b, `},"text":`...)
	b = jsonlite.AppendString(b, m.Text)
	b = jsonlite.AppendArray(b, `,"media":`, m.Media, appendMedia)
	b = optTrue(b, `,"direct":true`, m.Direct)
	b = optTrue(b, `,"mentioned":true`, m.Mentioned)
	b = optString(b, `,"reply_to":`, m.ReplyTo)
	if q := m.Quote; q != nil {
		b = append(b, `,"quote":{`...)
		if q.Author != "" {
			b = append(b, `"author":`...)
			b = jsonlite.AppendString(b, q.Author)
			b = append(b, ',')
		}
		b = append(b, `"text":`...)
		b = jsonlite.AppendString(b, q.Text)
		b = optTrue(b, `,"from_bot":true`, q.FromBot)
		b = append(b, '}')
	}
	b = optTrue(b, `,"from_self":true`, m.FromSelf)
	b = append(b, `,"time":"`...)
	b, err := m.Time.AppendText(b) // MarshalJSON's format and checks, unquoted
	if err != nil {
		return dst, fmt.Errorf("message time: %w", err)
	}
	b = append(b, '"')
	b = optString(b, `,"parent_id":`, m.ParentID)
	return append(b, '}'), nil
}

func appendMedia(b []byte, md *Media) []byte {
	b = append(b, `{"mime":`...)
	b = jsonlite.AppendString(b, md.MIME)
	b = optString(b, `,"name":`, md.Name)
	if len(md.Data) > 0 {
		b = append(b, `,"data":"`...)
		b = base64.StdEncoding.AppendEncode(b, md.Data)
		b = append(b, '"')
	}
	return append(b, '}')
}

func optString(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	return jsonlite.AppendString(append(b, key...), v)
}

func optTrue(b []byte, field string, v bool) []byte {
	if !v {
		return b
	}
	return append(b, field...)
}
