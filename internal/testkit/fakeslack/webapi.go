package fakeslack

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The Web API handlers: each checks the token and the scripted failures,
// records the call and answers in Slack's shape.

func token(r *http.Request, form url.Values) string {
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		return strings.TrimPrefix(h, "Bearer ")
	}
	return form.Get("token")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func apiError(w http.ResponseWriter, code string) {
	writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": code})
}

// begin parses the request, counts the call, checks the token and applies any
// script for method; it returns the form, or ok=false when it already answered.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, method, wantToken string) (url.Values, bool) {
	form := url.Values{}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		body, _ := io.ReadAll(r.Body)
		var m map[string]any
		if len(body) > 0 && json.Unmarshal(body, &m) == nil {
			for k, v := range m {
				form.Set(k, fmt.Sprint(v))
			}
		}
	} else if err := r.ParseForm(); err == nil {
		form = r.PostForm
		if len(form) == 0 {
			form = r.Form
		}
	}
	s.mu.Lock()
	s.calls[method]++
	var sc *script
	for len(s.scripts[method]) > 0 {
		head := s.scripts[method][0]
		if head.remaining <= 0 {
			s.scripts[method] = s.scripts[method][1:]
			continue
		}
		head.remaining--
		sc = head
		break
	}
	s.notifyLocked()
	s.mu.Unlock()

	if token(r, form) != wantToken {
		apiError(w, "invalid_auth")
		return nil, false
	}
	if sc != nil {
		if sc.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(sc.retryAfter))
			writeJSON(w, http.StatusTooManyRequests, map[string]any{"ok": false, "error": "ratelimited"})
			return nil, false
		}
		status := sc.status
		if status == 0 {
			status = http.StatusOK
		}
		writeJSON(w, status, map[string]any{"ok": false, "error": sc.errCode})
		return nil, false
	}
	form.Del("token")
	return form, true
}

func (s *Server) handleAuthTest(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r, "auth.test", s.opts.BotToken); !ok {
		return
	}
	s.mu.Lock()
	code, needed := s.authErr, s.authNeeded
	s.mu.Unlock()
	if code != "" {
		resp := map[string]any{"ok": false, "error": code}
		if needed != "" {
			resp["needed"] = needed
			resp["provided"] = "chat:write"
		}
		writeJSON(w, http.StatusOK, resp)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"ok": true, "url": "https://fake.slack.com/", "team": "Fake Team", "user": "switchboard",
		"team_id": s.opts.TeamID, "user_id": s.opts.BotUserID, "bot_id": s.opts.BotID,
	})
}

func (s *Server) handleConnectionsOpen(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r, "apps.connections.open", s.opts.AppToken); !ok {
		return
	}
	s.mu.Lock()
	code := s.openErr
	s.seq++
	ticket := fmt.Sprintf("ticket-%d", s.seq)
	if code == "" {
		s.tickets[ticket] = true
	}
	s.mu.Unlock()
	if code != "" {
		apiError(w, code)
		return
	}
	u := "ws://" + s.ts.ServerAddr + "/ws?ticket=" + ticket + "&app_id=" + s.opts.AppID
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "url": u})
}

func (s *Server) handlePostMessage(w http.ResponseWriter, r *http.Request) {
	form, ok := s.begin(w, r, "chat.postMessage", s.opts.BotToken)
	if !ok {
		return
	}
	channel, text := form.Get("channel"), form.Get("text")
	if channel == "" {
		apiError(w, "channel_not_found")
		return
	}
	if text == "" && form.Get("blocks") == "" && form.Get("attachments") == "" {
		apiError(w, "no_text")
		return
	}
	s.mu.Lock()
	ts := s.nextTSLocked()
	p := Post{Method: "chat.postMessage", Channel: channel, TS: ts, ThreadTS: form.Get("thread_ts"), Text: text, Form: form}
	s.posts = append(s.posts, p)
	s.notifyLocked()
	echo := s.opts.EchoBotMessages
	s.mu.Unlock()

	msg := map[string]any{"type": "message", "text": text, "user": s.opts.BotUserID, "bot_id": s.opts.BotID, "ts": ts}
	if p.ThreadTS != "" {
		msg["thread_ts"] = p.ThreadTS
	}
	if echo { // queued before the answer, so it is on its way when the post returns
		ev := maps(msg)
		ev["channel"] = channel
		ev["event_ts"] = ts
		ev["channel_type"] = channelType(channel)
		s.SendEvent(ev)
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "channel": channel, "ts": ts, "message": msg})
}

func maps(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (s *Server) handleUpdate(w http.ResponseWriter, r *http.Request) {
	form, ok := s.begin(w, r, "chat.update", s.opts.BotToken)
	if !ok {
		return
	}
	channel, ts, text := form.Get("channel"), form.Get("ts"), form.Get("text")
	s.mu.Lock()
	found := slices.ContainsFunc(s.posts, func(p Post) bool {
		return p.Method == "chat.postMessage" && p.Channel == channel && p.TS == ts
	})
	if found {
		s.posts = append(s.posts, Post{Method: "chat.update", Channel: channel, TS: ts, Text: text, Form: form})
		s.notifyLocked()
	}
	s.mu.Unlock()
	if !found {
		apiError(w, "message_not_found")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "channel": channel, "ts": ts, "text": text})
}

func (s *Server) handleSetStatus(w http.ResponseWriter, r *http.Request) {
	form, ok := s.begin(w, r, "assistant.threads.setStatus", s.opts.BotToken)
	if !ok {
		return
	}
	s.mu.Lock()
	s.statuses = append(s.statuses, Status{Channel: form.Get("channel_id"), ThreadTS: form.Get("thread_ts"), Status: form.Get("status")})
	s.notifyLocked()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

func (s *Server) handleUsersInfo(w http.ResponseWriter, r *http.Request) {
	form, ok := s.begin(w, r, "users.info", s.opts.BotToken)
	if !ok {
		return
	}
	id := form.Get("user")
	s.mu.Lock()
	name, known := s.users[id]
	s.mu.Unlock()
	if !known {
		apiError(w, "user_not_found")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "user": map[string]any{
		"id": id, "team_id": s.opts.TeamID, "name": strings.ToLower(strings.ReplaceAll(name, " ", ".")),
		"real_name": name, "profile": map[string]any{"real_name": name, "display_name": name},
	}})
}

// handleHistory answers conversations.history (top-level messages of a
// channel, newest first, after oldest) and conversations.replies (a thread's
// root and replies, oldest first) from the bot's recorded posts.
func (s *Server) handleHistory(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	form, ok := s.begin(w, r, method, s.opts.BotToken)
	if !ok {
		return
	}
	channel, thread, oldest := form.Get("channel"), form.Get("ts"), form.Get("oldest")
	s.mu.Lock()
	var msgs []map[string]any
	for _, p := range s.posts {
		if p.Method != "chat.postMessage" || p.Channel != channel {
			continue
		}
		if method == "conversations.replies" && p.ThreadTS != thread && p.TS != thread {
			continue
		}
		if method == "conversations.history" && (p.ThreadTS != "" || (oldest != "" && p.TS <= oldest)) {
			continue
		}
		m := map[string]any{"type": "message", "text": p.Text, "user": s.opts.BotUserID, "bot_id": s.opts.BotID, "ts": p.TS}
		if p.ThreadTS != "" {
			m["thread_ts"] = p.ThreadTS
		}
		msgs = append(msgs, m)
	}
	s.mu.Unlock()
	if method == "conversations.history" {
		slices.Reverse(msgs) // newest first, as Slack answers
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "messages": msgs, "has_more": false})
}

func (s *Server) handleUnknownMethod(w http.ResponseWriter, r *http.Request) {
	apiError(w, "unknown_method")
}

func (s *Server) handleFile(w http.ResponseWriter, r *http.Request) {
	// /files-pri/<team>-<id>/<name>
	rest := strings.TrimPrefix(r.URL.Path, "/files-pri/")
	teamAndID, _, _ := strings.Cut(rest, "/")
	id := strings.TrimPrefix(teamAndID, s.opts.TeamID+"-")
	authorized := r.Header.Get("Authorization") == "Bearer "+s.opts.BotToken
	s.mu.Lock()
	f, found := s.files[id]
	s.downloads = append(s.downloads, Download{FileID: id, Authorized: authorized})
	s.notifyLocked()
	s.mu.Unlock()
	if !authorized {
		http.Redirect(w, r, "/signin?redir="+url.QueryEscape(r.URL.Path), http.StatusFound)
		return
	}
	if !found {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.Mimetype)
	w.Header().Set("Content-Length", strconv.Itoa(len(f.Data)))
	_, _ = w.Write(f.Data)
}

func (s *Server) handleSignin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html")
	_, _ = io.WriteString(w, "<html><body>Sign in to Fake Team</body></html>")
}

// nextTSLocked returns "<seconds>.<seq>": the server's start second (so a
// ts compares with real time as Slack's do) and an increasing sequence.
func (s *Server) nextTSLocked() string {
	s.seq++
	return fmt.Sprintf("%d.%06d", s.tsBase, s.seq)
}

// NextTS returns a fresh, increasing Slack message timestamp.
func (s *Server) NextTS() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextTSLocked()
}

func channelType(channel string) string {
	switch {
	case strings.HasPrefix(channel, "D"):
		return "im"
	case strings.HasPrefix(channel, "G"):
		return "group"
	default:
		return "channel"
	}
}
