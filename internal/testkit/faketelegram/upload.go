package faketelegram

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"strings"
)

// Uploads. The Bot API takes a file either as a file_id / URL string or as a
// multipart file part; a part named like the parameter ("voice") is that
// parameter (go-telegram/bot's InputFileUpload), and "attach://<name>"
// names another part. decodeFields keeps an uploaded part's bytes as the
// field's value and its file name under "<field>:filename".

// maxUpload is the Bot API's upload limit for bots (50 MB).
const maxUpload = 50 << 20

// uploadFields adds the multipart file parts of form to out.
func uploadFields(form *multipart.Form, out map[string]string) error {
	for k, fhs := range form.File {
		if len(fhs) == 0 {
			continue
		}
		f, err := fhs[0].Open()
		if err != nil {
			return fmt.Errorf("invalid file part %s: %w", k, err)
		}
		data, err := io.ReadAll(io.LimitReader(f, maxUpload+1))
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("invalid file part %s: %w", k, err)
		}
		out[k] = string(data)
		out[k+":filename"] = fhs[0].Filename
	}
	return nil
}

// SentVoice is a voice note the bot sent with sendVoice.
type SentVoice struct {
	ChatID    int64
	MessageID int
	ThreadID  int
	FileName  string // the uploaded part's file name; "" for a file_id
	Audio     []byte // the uploaded bytes
	Caption   string
}

// Voices returns the voice notes the bot sent in chatID, oldest first.
func (s *Server) Voices(chatID int64) []SentVoice {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SentVoice
	for _, v := range s.voices {
		if v.ChatID == chatID {
			out = append(out, v)
		}
	}
	return out
}

// sendVoice is https://core.telegram.org/bots/api#sendvoice: an uploaded
// OGG/Opus file (checked to be OGG, as Telegram only shows those as voice
// notes), or the file_id of a file the server has.
func (s *Server) sendVoice(fields map[string]string) (any, *Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, f := s.resolveChat(fields)
	if f != nil {
		return nil, f
	}
	v, ok := fields["voice"]
	name, uploaded := fields["voice:filename"]
	if ref, isAttach := strings.CutPrefix(v, "attach://"); isAttach && !uploaded {
		v, ok = fields[ref]
		name, uploaded = fields[ref+":filename"]
	}
	switch {
	case !ok || v == "":
		return nil, badRequest("there is no voice in the request")
	case !uploaded && s.files[v] == nil:
		return nil, badRequest("wrong file identifier/HTTP URL specified")
	case uploaded && len(v) > maxUpload:
		return nil, &Failure{Code: 413, Description: "Request Entity Too Large"}
	case uploaded && !bytes.HasPrefix([]byte(v), []byte("OggS")):
		return nil, badRequest("VOICE_MESSAGES_FORBIDDEN: the file must be OGG/Opus to be a voice note")
	}
	if len(fields["caption"]) > 1024 {
		return nil, badRequest("message caption is too long")
	}
	thread, _, f := intField(fields, "message_thread_id")
	if f != nil {
		return nil, f
	}
	audio := []byte(v)
	if !uploaded {
		audio = s.files[v].data
	}
	file := File{FileID: fmt.Sprintf("voice-out-%d", len(s.voices)+1), FileUniqueID: fmt.Sprintf("vo%d", len(s.voices)+1),
		FileSize: int64(len(audio))}
	bot := s.bot
	m := s.appendMessage(c, Message{From: &bot, Date: s.now().Unix(), Caption: fields["caption"], MessageThreadID: int(thread),
		IsTopicMessage: thread != 0 && c.chat.IsForum,
		Voice:          &Voice{FileID: file.FileID, FileUniqueID: file.FileUniqueID, MimeType: "audio/ogg", FileSize: file.FileSize}}, true)
	s.voices = append(s.voices, SentVoice{ChatID: c.chat.ID, MessageID: m.msg.MessageID, ThreadID: int(thread),
		FileName: name, Audio: audio, Caption: fields["caption"]})
	s.notify()
	return m.msg, nil
}
