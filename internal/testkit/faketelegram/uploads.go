package faketelegram

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// Files the bot sends: sendDocument and sendPhoto, multipart uploads as the
// Bot API takes them (the file in the part named after the parameter,
// "document" or "photo"; decodeFields keeps its bytes and file name, see
// upload.go). Telegram's limits apply: 10 MB for a photo, 50 MB
// for any other file (413 Request Entity Too Large beyond).

// Upload limits of the Bot API.
const (
	MaxPhotoUpload    = 10 << 20
	MaxDocumentUpload = 50 << 20
)

// Upload is a file the bot sent.
type Upload struct {
	Method    string // "sendDocument" or "sendPhoto"
	ChatID    int64
	MessageID int
	ThreadID  int
	Name      string // the multipart file name
	Data      []byte
	Caption   string
	ReplyTo   int // reply_parameters.message_id
	Time      time.Time
}

func (s *Server) sendUpload(method string, fields map[string]string) (any, *Failure) {
	field, limit, name := "document", MaxDocumentUpload, "sendDocument"
	if method == "sendphoto" {
		field, limit, name = "photo", MaxPhotoUpload, "sendPhoto"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, f := s.resolveChat(fields)
	if f != nil {
		return nil, f
	}
	if _, ok := fields[field+":filename"]; !ok {
		return nil, badRequest("there is no " + field + " in the request")
	}
	data := []byte(fields[field])
	if len(data) > limit {
		return nil, &Failure{Code: 413, Description: "Request Entity Too Large"}
	}
	thread, _, f := intField(fields, "message_thread_id")
	if f != nil {
		return nil, f
	}
	up := Upload{Method: name, ChatID: c.chat.ID, ThreadID: int(thread), Name: fields[field+":filename"],
		Data: data, Caption: fields["caption"], Time: s.now()}
	if rp := fields["reply_parameters"]; rp != "" {
		var p ReplyParameters
		if err := json.Unmarshal([]byte(rp), &p); err != nil {
			return nil, badRequest("can't parse reply parameters JSON object")
		}
		up.ReplyTo = p.MessageID
	}
	s.nextFile++
	id := fmt.Sprintf("up-%d", s.nextFile)
	bot := s.bot
	msg := Message{From: &bot, Date: s.now().Unix(), Caption: up.Caption, MessageThreadID: up.ThreadID}
	if field == "photo" {
		msg.Photo = []PhotoSize{{FileID: id, FileUniqueID: id, FileSize: len(data)}}
	} else {
		msg.Document = &Document{FileID: id, FileUniqueID: id, FileName: up.Name, FileSize: int64(len(data))}
	}
	m := s.appendMessage(c, msg, true)
	up.MessageID = m.msg.MessageID
	s.uploads = append(s.uploads, up)
	s.notify()
	return m.msg, nil
}

// Uploads returns the files the bot sent to chatID (0 = every chat), in order.
func (s *Server) Uploads(chatID int64) []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Upload
	for _, u := range s.uploads {
		if chatID == 0 || u.ChatID == chatID {
			out = append(out, u)
		}
	}
	return out
}

// WaitUploads waits until at least n files were sent to chatID.
func (s *Server) WaitUploads(t testing.TB, chatID int64, n int, timeout time.Duration) []Upload {
	t.Helper()
	s.WaitFor(t, timeout, fmt.Sprintf("%d upload(s) to chat %d", n, chatID), func() bool { return len(s.Uploads(chatID)) >= n })
	return s.Uploads(chatID)
}
