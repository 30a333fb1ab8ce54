package fakediscord

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"message": msg, "code": code})
}

// authorized checks "Authorization: Bot <token>".
func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	if !strings.HasPrefix(h, "Bot ") {
		return false
	}
	return s.opts.Token == "" || strings.TrimPrefix(h, "Bot ") == s.opts.Token
}

// requireAuth records the request and answers 401 when unauthorized.
func (s *Server) requireAuth(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if s.authorized(r) {
		return true
	}
	s.record(r, body, http.StatusUnauthorized, false)
	writeError(w, http.StatusUnauthorized, 0, "401: Unauthorized")
	return false
}

func (s *Server) handleGateway(w http.ResponseWriter, r *http.Request) {
	s.record(r, nil, http.StatusOK, s.authorized(r))
	writeJSON(w, http.StatusOK, map[string]any{"url": s.GatewayURL()})
}

func (s *Server) handleGatewayBot(w http.ResponseWriter, r *http.Request) {
	if !s.requireAuth(w, r, nil) {
		return
	}
	s.record(r, nil, http.StatusOK, true)
	writeJSON(w, http.StatusOK, map[string]any{
		"url":    s.GatewayURL(),
		"shards": 1,
		"session_start_limit": map[string]any{
			"total": 1000, "remaining": 999, "reset_after": 14400000, "max_concurrency": 1,
		},
	})
}

func (s *Server) handleMe(w http.ResponseWriter, r *http.Request) {
	if !s.requireAuth(w, r, nil) {
		return
	}
	s.record(r, nil, http.StatusOK, true)
	writeJSON(w, http.StatusOK, s.botUser())
}

func (s *Server) handleGetChannel(w http.ResponseWriter, r *http.Request) {
	if !s.requireAuth(w, r, nil) {
		return
	}
	s.mu.Lock()
	rec := s.channels[r.PathValue("cid")]
	var c Channel
	if rec != nil {
		c = rec.Channel
	}
	status := http.StatusOK
	if rec == nil {
		status = http.StatusNotFound
	}
	s.recordLocked(r, nil, status, true)
	s.mu.Unlock()
	if rec == nil {
		writeError(w, http.StatusNotFound, 10003, "Unknown Channel")
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// handleHistory serves GET /channels/{id}/messages with after/before/limit:
// like Discord, newest first, at most limit (default 50, max 100); with after,
// the messages immediately following it.
func (s *Server) handleHistory(w http.ResponseWriter, r *http.Request) {
	if !s.requireAuth(w, r, nil) {
		return
	}
	q := r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			s.record(r, nil, http.StatusBadRequest, true)
			writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body")
			return
		}
		limit = n
	}
	s.mu.Lock()
	rec := s.channels[r.PathValue("cid")]
	if rec == nil {
		s.recordLocked(r, nil, http.StatusNotFound, true)
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, 10003, "Unknown Channel")
		return
	}
	after, before := q.Get("after"), q.Get("before")
	var sel []Message
	if after != "" {
		for _, m := range rec.messages { // oldest first
			if snowflakeLess(after, m.ID) && (before == "" || snowflakeLess(m.ID, before)) {
				sel = append(sel, restMessage(*m))
				if len(sel) == limit {
					break
				}
			}
		}
	} else {
		for i := len(rec.messages) - 1; i >= 0 && len(sel) < limit; i-- {
			m := rec.messages[i]
			if before == "" || snowflakeLess(m.ID, before) {
				sel = append(sel, restMessage(*m))
			}
		}
	}
	sortMessagesDesc(sel)
	if sel == nil {
		sel = []Message{}
	}
	s.recordLocked(r, nil, http.StatusOK, true)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, sel)
}

type createBody struct {
	Content          string            `json:"content"`
	Nonce            json.RawMessage   `json:"nonce"`
	EnforceNonce     bool              `json:"enforce_nonce"`
	AllowedMentions  *AllowedMentions  `json:"allowed_mentions"`
	MessageReference *MessageReference `json:"message_reference"`
	Embeds           []json.RawMessage `json:"embeds"`
	TTS              bool              `json:"tts"`
}

func nonceString(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str
	}
	return string(raw) // integer nonce
}

// writeFailure answers a scripted (non-drop) failure.
func (s *Server) writeFailure(w http.ResponseWriter, f failure) {
	if f.status == http.StatusTooManyRequests {
		scope := "user"
		if f.global {
			scope = "global"
			w.Header().Set("X-RateLimit-Global", "true")
		}
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(f.retryAfter))))
		w.Header().Set("X-RateLimit-Limit", "5")
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset-After", strconv.FormatFloat(f.retryAfter, 'f', 3, 64))
		w.Header().Set("X-RateLimit-Bucket", "fakebucket")
		w.Header().Set("X-RateLimit-Scope", scope)
		writeJSON(w, http.StatusTooManyRequests, map[string]any{
			"message": "You are being rate limited.", "retry_after": f.retryAfter, "global": f.global,
		})
		return
	}
	writeError(w, f.status, f.code, f.message)
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if !s.requireAuth(w, r, body) {
		return
	}
	cid := r.PathValue("cid")
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		s.handleCreateFiles(w, r, body) // attachments (files.go)
		return
	}
	var in createBody
	mr := MessageRequest{Method: http.MethodPost, ChannelID: cid, At: time.Now(), Raw: append(json.RawMessage(nil), body...)}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		s.finishMessageRequest(w, r, body, mr, http.StatusBadRequest, 50035, "fakediscord: only application/json bodies are supported")
		return
	}
	if err := json.Unmarshal(body, &in); err != nil {
		s.finishMessageRequest(w, r, body, mr, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return
	}
	mr.Content, mr.AllowedMentions, mr.MessageReference = in.Content, in.AllowedMentions, in.MessageReference
	mr.Nonce, mr.EnforceNonce = nonceString(in.Nonce), in.EnforceNonce

	s.mu.Lock()
	f, failing := s.takeFailureLocked()
	if failing && !f.drop {
		mr.Status = f.status
		s.msgReqs = append(s.msgReqs, mr)
		s.recordLocked(r, body, f.status, true)
		s.mu.Unlock()
		s.writeFailure(w, f)
		return
	}
	rec := s.channels[cid]
	status, code, msg := 0, 0, ""
	switch {
	case rec == nil:
		status, code, msg = http.StatusNotFound, 10003, "Unknown Channel"
	case in.Content == "" && len(in.Embeds) == 0:
		status, code, msg = http.StatusBadRequest, 50006, "Cannot send an empty message"
	case utf8.RuneCountInString(in.Content) > 2000:
		status, code, msg = http.StatusBadRequest, 50035, "Invalid Form Body (content: Must be 2000 or fewer in length.)"
	case len(mr.Nonce) > 25:
		status, code, msg = http.StatusBadRequest, 50035, "Invalid Form Body (nonce: Must be 25 or fewer in length.)"
	}
	if status == 0 && in.MessageReference != nil && in.MessageReference.MessageID != "" && findMessage(rec, in.MessageReference.MessageID) == nil {
		if in.MessageReference.FailIfNotExists == nil || *in.MessageReference.FailIfNotExists {
			status, code, msg = http.StatusBadRequest, 50035, "Invalid Form Body (message_reference: Unknown message)"
		}
	}
	if status != 0 {
		mr.Status = status
		s.msgReqs = append(s.msgReqs, mr)
		s.recordLocked(r, body, status, true)
		s.mu.Unlock()
		writeError(w, status, code, msg)
		return
	}
	// enforce_nonce: an existing message by the bot with the same nonce is
	// returned instead of creating a duplicate.
	if in.EnforceNonce && mr.Nonce != "" {
		for _, m := range rec.messages {
			if m.Author.ID == s.opts.BotID && m.Nonce == mr.Nonce {
				existing := restMessage(*m)
				mr.Status, mr.MessageID = http.StatusOK, m.ID
				s.msgReqs = append(s.msgReqs, mr)
				s.recordLocked(r, body, http.StatusOK, true)
				s.mu.Unlock()
				writeJSON(w, http.StatusOK, existing)
				return
			}
		}
	}
	m := &Message{
		ID: s.nextIDLocked(), ChannelID: cid, GuildID: rec.GuildID, Author: s.botUser(),
		Content: in.Content, Timestamp: timestamp(time.Now()), Mentions: []User{}, MentionRoles: []string{},
		Attachments: []Attachment{}, Embeds: []json.RawMessage{}, Nonce: mr.Nonce, TTS: in.TTS,
	}
	if in.MessageReference != nil && in.MessageReference.MessageID != "" {
		if ref := findMessage(rec, in.MessageReference.MessageID); ref != nil {
			m.Type = 19
			m.MessageReference = &MessageReference{MessageID: ref.ID, ChannelID: cid, GuildID: rec.GuildID}
			cp := *ref
			cp.ReferencedMessage = nil
			m.ReferencedMessage = &cp
		}
	}
	rec.messages = append(rec.messages, m)
	s.dispatchMessageLocked("MESSAGE_CREATE", m)
	status = http.StatusOK
	mr.MessageID = m.ID
	mr.Status = status
	if failing && f.drop {
		mr.Status = 0 // no answer was given
	}
	s.msgReqs = append(s.msgReqs, mr)
	s.recordLocked(r, body, mr.Status, true)
	out := restMessage(*m)
	s.mu.Unlock()

	if failing && f.drop {
		hangUp(w)
		return
	}
	writeJSON(w, status, out)
}

// hangUp closes the connection without answering.
func hangUp(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("fakediscord: response writer cannot hijack")
	}
	conn, _, err := hj.Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

func (s *Server) finishMessageRequest(w http.ResponseWriter, r *http.Request, body []byte, mr MessageRequest, status, code int, msg string) {
	s.mu.Lock()
	mr.Status = status
	s.msgReqs = append(s.msgReqs, mr)
	s.recordLocked(r, body, status, true)
	s.mu.Unlock()
	writeError(w, status, code, msg)
}

type editBody struct {
	Content         *string          `json:"content"`
	AllowedMentions *AllowedMentions `json:"allowed_mentions"`
}

func (s *Server) handleEdit(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if !s.requireAuth(w, r, body) {
		return
	}
	cid, mid := r.PathValue("cid"), r.PathValue("mid")
	mr := MessageRequest{Method: http.MethodPatch, ChannelID: cid, MessageID: mid, At: time.Now(), Raw: append(json.RawMessage(nil), body...)}
	var in editBody
	if err := json.Unmarshal(body, &in); err != nil {
		s.finishMessageRequest(w, r, body, mr, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return
	}
	mr.AllowedMentions = in.AllowedMentions
	if in.Content != nil {
		mr.Content = *in.Content
	}
	s.mu.Lock()
	if f, failing := s.takeFailureLocked(); failing && !f.drop {
		mr.Status = f.status
		s.msgReqs = append(s.msgReqs, mr)
		s.recordLocked(r, body, f.status, true)
		s.mu.Unlock()
		s.writeFailure(w, f)
		return
	}
	rec := s.channels[cid]
	var m *Message
	if rec != nil {
		m = findMessage(rec, mid)
	}
	status, code, msg := 0, 0, ""
	switch {
	case rec == nil:
		status, code, msg = http.StatusNotFound, 10003, "Unknown Channel"
	case m == nil:
		status, code, msg = http.StatusNotFound, 10008, "Unknown Message"
	case m.Author.ID != s.opts.BotID:
		status, code, msg = http.StatusForbidden, 50005, "Cannot edit a message authored by another user"
	case in.Content != nil && utf8.RuneCountInString(*in.Content) > 2000:
		status, code, msg = http.StatusBadRequest, 50035, "Invalid Form Body (content: Must be 2000 or fewer in length.)"
	}
	if status != 0 {
		mr.Status = status
		s.msgReqs = append(s.msgReqs, mr)
		s.recordLocked(r, body, status, true)
		s.mu.Unlock()
		writeError(w, status, code, msg)
		return
	}
	if in.Content != nil {
		m.Content = *in.Content
	}
	ts := timestamp(time.Now())
	m.EditedTimestamp = &ts
	s.dispatchMessageLocked("MESSAGE_UPDATE", m)
	mr.Status = http.StatusOK
	s.msgReqs = append(s.msgReqs, mr)
	s.recordLocked(r, body, http.StatusOK, true)
	out := restMessage(*m)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// restMessage is m as the REST API returns it: unlike gateway events, REST
// message objects carry no guild_id and no member.
func restMessage(m Message) Message {
	m.GuildID = ""
	m.Member = nil
	if m.ReferencedMessage != nil {
		ref := restMessage(*m.ReferencedMessage)
		m.ReferencedMessage = &ref
	}
	return m
}

func (s *Server) handleTyping(w http.ResponseWriter, r *http.Request) {
	if !s.requireAuth(w, r, nil) {
		return
	}
	cid := r.PathValue("cid")
	s.mu.Lock()
	if s.channels[cid] == nil {
		s.recordLocked(r, nil, http.StatusNotFound, true)
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, 10003, "Unknown Channel")
		return
	}
	s.typing[cid]++
	s.recordLocked(r, nil, http.StatusNoContent, true)
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleAttachment(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	a, ok := s.attachments[r.URL.Path]
	status := http.StatusOK
	if !ok {
		status = http.StatusNotFound
	}
	s.recordLocked(r, nil, status, true)
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if a.contentType != "" {
		w.Header().Set("Content-Type", a.contentType)
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(a.data)))
	_, _ = w.Write(a.data)
}
