package fakewhatsapp

import (
	"fmt"
	"io"
	"net/http"
	"time"
)

// Media the bot sends, as the Cloud API takes it: POST /{phone-number-id}/media
// (multipart: messaging_product=whatsapp, type, file) answers {"id"}; a
// message of type document ({id, filename, caption}) or image ({id,
// caption}) then names it. Uploads over the Cloud API's limits are refused
// (100 MB a document, 5 MB an image), and a media message outside the
// 24-hour window is refused like a text.

// Upload limits of the Cloud API.
const (
	MaxDocument = 100 << 20
	MaxImage    = 5 << 20
)

type outMedia struct {
	ID       string `json:"id"`
	Filename string `json:"filename"`
	Caption  string `json:"caption"`
}

func (s *Server) serveUpload(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		graphErr(w, http.StatusBadRequest, 100, "OAuthException", "(#100) Invalid multipart body", "")
		return
	}
	if r.FormValue("messaging_product") != "whatsapp" {
		graphErr(w, http.StatusBadRequest, 100, "OAuthException", "(#100) The parameter messaging_product is required.", "")
		return
	}
	f, fh, err := r.FormFile("file")
	if err != nil {
		graphErr(w, http.StatusBadRequest, 100, "OAuthException", "(#100) The parameter file is required.", "")
		return
	}
	data, _ := io.ReadAll(f)
	_ = f.Close()
	if len(data) > MaxDocument {
		graphErr(w, http.StatusBadRequest, 131053, "OAuthException", "(#131053) Media upload error", "file too large")
		return
	}
	mime := r.FormValue("type")
	if mime == "" {
		mime = fh.Header.Get("Content-Type")
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": s.AddMedia(mime, data)})
}

// mediaMessageLocked checks and records a document or image message in m;
// false: it answered with an error.
func (s *Server) mediaMessageLocked(w http.ResponseWriter, b outBody, m *Sent) bool {
	md := b.Document
	if b.Type == "image" {
		md = b.Image
	}
	if md == nil || md.ID == "" {
		graphErr(w, http.StatusBadRequest, 100, "OAuthException", fmt.Sprintf("(#100) The parameter %s['id'] is required.", b.Type), "")
		return false
	}
	f, ok := s.media[md.ID]
	if !ok {
		graphErr(w, http.StatusBadRequest, 131053, "OAuthException", "(#131053) Media upload error", "unknown media id")
		return false
	}
	if b.Type == "image" && len(f.data) > MaxImage {
		graphErr(w, http.StatusBadRequest, 131053, "OAuthException", "(#131053) Media upload error", "image too large")
		return false
	}
	if last, ok := s.lastUser[m.To]; !ok || s.opts.Now().Sub(last) > 24*time.Hour {
		s.refused++
		s.notify()
		graphErr(w, http.StatusBadRequest, 131047, "OAuthException", "(#131047) Re-engagement message",
			"Message failed to send because more than 24 hours have passed since the customer last replied to this number.")
		return false
	}
	m.MediaID, m.Filename, m.Caption = md.ID, md.Filename, md.Caption
	return true
}

// SentFile is a document or image the bot sent, with its media's bytes.
type SentFile struct {
	Sent
	MIME string
	Data []byte
}

// Files returns the documents and images the bot sent to waID ("" = all).
func (s *Server) Files(waID string) []SentFile {
	sent := s.Sent(waID)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SentFile
	for _, m := range sent {
		if m.MediaID == "" {
			continue
		}
		f := s.media[m.MediaID]
		out = append(out, SentFile{Sent: m, MIME: f.mime, Data: append([]byte(nil), f.data...)})
	}
	return out
}
