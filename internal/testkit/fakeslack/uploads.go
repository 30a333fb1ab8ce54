package fakeslack

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Files the bot uploads, the external upload flow: files.getUploadURLExternal
// (filename, length) answers an upload_url on this server and a file id;
// the client POSTs the bytes there (multipart, field "file", bot token as a
// Bearer header); files.completeUploadExternal (files=[{id,title}],
// channel_id, initial_comment, thread_ts) shares them. A completion of a
// file whose bytes never arrived, or whose size differs from the announced
// length, fails as Slack's does.

// Upload is a file the bot shared.
type Upload struct {
	FileID   string
	Channel  string
	ThreadTS string
	Name     string
	Title    string
	Data     []byte
	Comment  string // initial_comment
}

type pendingUpload struct {
	name   string
	length int
	data   []byte
	done   bool
}

// uploadState is the Server's upload bookkeeping, guarded by Server.mu.
type uploadState struct {
	seq     int
	pending map[string]*pendingUpload
	shared  []Upload
}

func (s *Server) handleGetUploadURL(w http.ResponseWriter, r *http.Request) {
	form, ok := s.begin(w, r, "files.getUploadURLExternal", s.opts.BotToken)
	if !ok {
		return
	}
	n, err := strconv.Atoi(form.Get("length"))
	if form.Get("filename") == "" || err != nil || n <= 0 {
		apiError(w, "invalid_arguments")
		return
	}
	s.mu.Lock()
	if s.uploads.pending == nil {
		s.uploads.pending = map[string]*pendingUpload{}
	}
	s.uploads.seq++
	id := fmt.Sprintf("F%08d", s.uploads.seq)
	s.uploads.pending[id] = &pendingUpload{name: form.Get("filename"), length: n}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "file_id": id,
		"upload_url": strings.TrimSuffix(s.ts.GetAPIURL(), "/") + "/upload/" + id})
}

func (s *Server) handleUploadBytes(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/upload/")
	if token(r, nil) != s.opts.BotToken {
		http.Error(w, "invalid_auth", http.StatusUnauthorized)
		return
	}
	file, _, err := r.FormFile("file")
	if err != nil {
		http.Error(w, "no file", http.StatusBadRequest)
		return
	}
	data, err := io.ReadAll(file)
	_ = file.Close()
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	p := s.uploads.pending[id]
	if p != nil {
		p.data = data
	}
	s.notifyLocked()
	s.mu.Unlock()
	if p == nil {
		http.Error(w, "unknown upload", http.StatusNotFound)
		return
	}
	_, _ = fmt.Fprintf(w, "OK - %d", len(data))
}

func (s *Server) handleCompleteUpload(w http.ResponseWriter, r *http.Request) {
	form, ok := s.begin(w, r, "files.completeUploadExternal", s.opts.BotToken)
	if !ok {
		return
	}
	var files []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(form.Get("files")), &files); err != nil || len(files) == 0 {
		apiError(w, "invalid_arguments")
		return
	}
	channel := form.Get("channel_id")
	if channel == "" {
		channel = form.Get("channels")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, f := range files {
		p := s.uploads.pending[f.ID]
		if p == nil || p.done || len(p.data) != p.length {
			apiError(w, "file_not_found")
			return
		}
	}
	for _, f := range files {
		p := s.uploads.pending[f.ID]
		p.done = true
		s.uploads.shared = append(s.uploads.shared, Upload{FileID: f.ID, Channel: channel, ThreadTS: form.Get("thread_ts"),
			Name: p.name, Title: f.Title, Data: p.data, Comment: form.Get("initial_comment")})
		out = append(out, map[string]any{"id": f.ID, "title": f.Title})
	}
	s.notifyLocked()
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "files": out})
}

// Uploads returns the files shared into channel ("" = everywhere), in order.
func (s *Server) Uploads(channel string) []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Upload
	for _, u := range s.uploads.shared {
		if channel == "" || u.Channel == channel {
			out = append(out, u)
		}
	}
	return out
}

// WaitUploads waits until at least n files were shared into channel.
func (s *Server) WaitUploads(t testing.TB, channel string, n int, timeout time.Duration) []Upload {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for len(s.Uploads(channel)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("fakeslack: timed out waiting for %d upload(s) in %s; have %d", n, channel, len(s.Uploads(channel)))
		}
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-time.After(20 * time.Millisecond):
		}
	}
	return s.Uploads(channel)
}
