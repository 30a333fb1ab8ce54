package fakediscord

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Message creates with attachments: multipart/form-data with a
// "payload_json" part (the message, nonce and enforce_nonce included) and
// the files in parts "files[n]", as discordgo's MultipartBodyWithJSON
// writes them. Files over MaxUpload are refused with 413 (code 40005);
// enforce_nonce returns the bot's existing message with that nonce instead
// of a second one.

// MaxUpload is the attachment limit the fake enforces (Discord's default
// tier for bots).
const MaxUpload = 25 << 20

// Upload is a file the bot attached to a message.
type Upload struct {
	ChannelID string
	MessageID string
	Name      string
	MIME      string
	Data      []byte
	Content   string // the message text beside the file
	Nonce     string
}

func (s *Server) handleCreateFiles(w http.ResponseWriter, r *http.Request, body []byte) {
	cid := r.PathValue("cid")
	_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	form, err := multipart.NewReader(bytes.NewReader(body), params["boundary"]).ReadForm(64 << 20)
	if err != nil {
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body")
		return
	}
	defer func() { _ = form.RemoveAll() }()
	var in createBody
	if v := form.Value["payload_json"]; len(v) == 0 || json.Unmarshal([]byte(v[0]), &in) != nil {
		writeError(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return
	}
	var ups []Upload
	for i := 0; ; i++ {
		fhs := form.File[fmt.Sprintf("files[%d]", i)]
		if len(fhs) == 0 {
			break
		}
		f, err := fhs[0].Open()
		if err != nil {
			writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body")
			return
		}
		data, _ := io.ReadAll(f)
		_ = f.Close()
		if len(data) > MaxUpload {
			writeError(w, http.StatusRequestEntityTooLarge, 40005, "Request entity too large")
			return
		}
		ups = append(ups, Upload{ChannelID: cid, Name: fhs[0].Filename, MIME: fhs[0].Header.Get("Content-Type"), Data: data,
			Content: in.Content, Nonce: nonceString(in.Nonce)})
	}
	mr := MessageRequest{Method: http.MethodPost, ChannelID: cid, At: time.Now(), Raw: append(json.RawMessage(nil), body...),
		Content: in.Content, Nonce: nonceString(in.Nonce), EnforceNonce: in.EnforceNonce}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.channels[cid]
	if rec == nil {
		mr.Status = http.StatusNotFound
		s.msgReqs = append(s.msgReqs, mr)
		writeError(w, http.StatusNotFound, 10003, "Unknown Channel")
		return
	}
	if len(ups) == 0 && strings.TrimSpace(in.Content) == "" {
		writeError(w, http.StatusBadRequest, 50006, "Cannot send an empty message")
		return
	}
	if in.EnforceNonce && mr.Nonce != "" {
		for _, m := range rec.messages {
			if m.Author.ID == s.opts.BotID && m.Nonce == mr.Nonce {
				mr.Status, mr.MessageID = http.StatusOK, m.ID
				s.msgReqs = append(s.msgReqs, mr)
				writeJSON(w, http.StatusOK, restMessage(*m))
				return
			}
		}
	}
	m := &Message{
		ID: s.nextIDLocked(), ChannelID: cid, GuildID: rec.GuildID, Author: s.botUser(),
		Content: in.Content, Timestamp: timestamp(time.Now()), Mentions: []User{}, MentionRoles: []string{},
		Attachments: []Attachment{}, Embeds: []json.RawMessage{}, Nonce: mr.Nonce,
	}
	for _, u := range ups {
		aid := s.nextIDLocked()
		path := fmt.Sprintf("/attachments/%s/%s/%s", cid, aid, u.Name)
		s.attachments[path] = attachmentRec{data: u.Data, contentType: u.MIME}
		m.Attachments = append(m.Attachments, Attachment{ID: aid, Filename: u.Name, ContentType: u.MIME, Size: len(u.Data),
			URL: s.srv.URL + path, ProxyURL: s.srv.URL + path})
		u.MessageID = m.ID
		s.uploads = append(s.uploads, u)
	}
	rec.messages = append(rec.messages, m)
	s.dispatchMessageLocked("MESSAGE_CREATE", m)
	mr.Status, mr.MessageID = http.StatusOK, m.ID
	s.msgReqs = append(s.msgReqs, mr)
	s.notifyLocked()
	writeJSON(w, http.StatusOK, restMessage(*m))
}

// Uploads returns the files the bot attached in channelID ("" = all), in order.
func (s *Server) Uploads(channelID string) []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Upload
	for _, u := range s.uploads {
		if channelID == "" || u.ChannelID == channelID {
			out = append(out, u)
		}
	}
	return out
}

// WaitUploads waits until at least n files were attached in channelID.
func (s *Server) WaitUploads(t testing.TB, channelID string, n int, timeout time.Duration) []Upload {
	t.Helper()
	s.WaitFor(t, timeout, fmt.Sprintf("%d upload(s) in %s", n, channelID), func() bool { return len(s.Uploads(channelID)) >= n })
	return s.Uploads(channelID)
}
