package faketelegram

import "fmt"

// Voice is https://core.telegram.org/bots/api#voice (OGG/Opus).
type Voice struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	Duration     int    `json:"duration"`
	MimeType     string `json:"mime_type,omitempty"`
	FileSize     int64  `json:"file_size,omitempty"`
}

// Audio is https://core.telegram.org/bots/api#audio (a music file).
type Audio struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	Duration     int    `json:"duration"`
	FileName     string `json:"file_name,omitempty"`
	MimeType     string `json:"mime_type,omitempty"`
	FileSize     int64  `json:"file_size,omitempty"`
}

// UserSendsVoice uploads ogg as a voice note (as Telegram clients record
// them: OGG/Opus, mime_type audio/ogg) and enqueues the message.
func (s *Server) UserSendsVoice(chatID int64, ogg []byte, seconds int, opts ...SayOption) Message {
	s.mu.Lock()
	s.voiceSeq++
	path := fmt.Sprintf("voice/file_%d.oga", s.voiceSeq)
	s.mu.Unlock()
	f := s.AddFile(ogg, path)
	return s.userMessage(chatID, Message{Voice: &Voice{FileID: f.FileID, FileUniqueID: f.FileUniqueID,
		Duration: seconds, MimeType: "audio/ogg", FileSize: f.FileSize}}, opts, true)
}

// UserSendsDocument uploads data as a document named name with mimeType
// and enqueues the message. announced, when non-zero, is the file_size the
// update claims (a platform announcing a 2 GB file).
func (s *Server) UserSendsDocument(chatID int64, data []byte, name, mimeType, caption string, announced int64, opts ...SayOption) Message {
	f := s.AddFile(data, "documents/"+name)
	size := f.FileSize
	if announced != 0 {
		size = announced
		s.mu.Lock()
		s.files[f.FileID].file.FileSize = announced
		s.mu.Unlock()
	}
	return s.userMessage(chatID, Message{Caption: caption, Document: &Document{FileID: f.FileID, FileUniqueID: f.FileUniqueID,
		FileName: name, MimeType: mimeType, FileSize: size}}, opts, true)
}

// Downloads is how many file downloads (GET /file/bot<token>/…) were served.
func (s *Server) Downloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.downloads
}
