package faketelegram

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// The Bot API methods the fake serves: each validates its fields as the
// real API does and answers in its shape, or with a Failure.

// getUpdates implements long polling. Call without s.mu held.
func (s *Server) getUpdates(ctx context.Context, fields map[string]string) (any, *Failure) {
	offset, _, f := intField(fields, "offset")
	if f != nil {
		return nil, f
	}
	limit, hasLimit, f := intField(fields, "limit")
	if f != nil {
		return nil, f
	}
	if !hasLimit || limit <= 0 || limit > 100 {
		limit = 100
	}
	timeout, _, f := intField(fields, "timeout")
	if f != nil {
		return nil, f
	}
	deadline := time.NewTimer(time.Duration(max(timeout, 0)) * time.Second)
	defer deadline.Stop()

	s.mu.Lock()
	if s.webhookURL != "" {
		s.mu.Unlock()
		return nil, &Failure{Code: 409, Description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"}
	}
	switch {
	case offset > 0:
		i := 0
		for i < len(s.queue) && s.queue[i].id < offset {
			i++
		}
		s.queue = s.queue[i:]
	case offset < 0:
		if keep := int(-offset); keep < len(s.queue) {
			s.queue = s.queue[len(s.queue)-keep:]
		}
	}
	s.pollSeq++
	seq := s.pollSeq
	s.notify()
	for {
		if s.pollSeq != seq {
			if peerGone(ctx) { // nobody waits for this call any more: no conflict
				s.mu.Unlock()
				return []json.RawMessage{}, nil
			}
			s.conflicts++
			s.mu.Unlock()
			return nil, &Failure{Code: 409, Description: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}
		}
		if len(s.queue) > 0 {
			n := min(int(limit), len(s.queue))
			out := make([]json.RawMessage, n)
			for i := range n {
				out[i] = s.queue[i].raw
				s.deliveries[s.queue[i].id]++
			}
			s.notify()
			s.mu.Unlock()
			return out, nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return []json.RawMessage{}, nil
		case <-ctx.Done():
			return []json.RawMessage{}, nil
		case <-s.closed:
			return []json.RawMessage{}, nil
		}
		s.mu.Lock()
	}
}

// resolveChat finds the chat a chat_id field names. Call with s.mu held.
func (s *Server) resolveChat(fields map[string]string) (*chatState, *Failure) {
	raw := strings.TrimSpace(fields["chat_id"])
	if raw == "" {
		return nil, badRequest("chat_id is empty")
	}
	if strings.HasPrefix(raw, "@") {
		for _, c := range s.chats {
			if strings.EqualFold("@"+c.chat.Username, raw) {
				return c, nil
			}
		}
		return nil, badRequest("chat not found")
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return nil, badRequest("chat not found")
	}
	if to, ok := s.migrated[id]; ok {
		return nil, &Failure{Code: 400, Description: "Bad Request: group chat was upgraded to a supergroup chat", MigrateToChatID: to}
	}
	if s.blocked[id] {
		if id > 0 {
			return nil, &Failure{Code: 403, Description: "Forbidden: bot was blocked by the user"}
		}
		return nil, &Failure{Code: 403, Description: "Forbidden: bot was kicked from the group chat"}
	}
	c := s.chats[id]
	if c == nil {
		return nil, badRequest("chat not found")
	}
	return c, nil
}

func renderText(text, parseMode string) (string, *Failure) {
	plain := text
	switch strings.ToLower(parseMode) {
	case "":
	case "html":
		p, err := parseHTML(text)
		if err != nil {
			return "", badRequest("can't parse entities: " + err.Error())
		}
		plain = p
	case "markdown", "markdownv2":
		// Accepted without validation: Switchboard sends HTML.
	default:
		return "", badRequest("unsupported parse_mode")
	}
	if strings.TrimSpace(plain) == "" {
		return "", badRequest("message text is empty")
	}
	if utf16Len(plain) > 4096 {
		return "", badRequest("message is too long")
	}
	return plain, nil
}

func (s *Server) sendMessage(fields map[string]string) (any, *Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, f := s.resolveChat(fields)
	if f != nil {
		return nil, f
	}
	if fields["text"] == "" {
		return nil, badRequest("message text is empty")
	}
	plain, f := renderText(fields["text"], fields["parse_mode"])
	if f != nil {
		return nil, f
	}
	thread, _, f := intField(fields, "message_thread_id")
	if f != nil {
		return nil, f
	}
	if thread != 0 && !c.chat.IsForum && c.chat.Type != "private" {
		return nil, badRequest("message thread not found")
	}
	var replyTo *Message
	replyID, allowWithout := 0, false
	if rp := fields["reply_parameters"]; rp != "" {
		var p ReplyParameters
		if err := json.Unmarshal([]byte(rp), &p); err != nil {
			return nil, badRequest("can't parse reply parameters JSON object")
		}
		replyID, allowWithout = p.MessageID, p.AllowSendingWithoutReply
	} else if v, ok, f := intField(fields, "reply_to_message_id"); f != nil {
		return nil, f
	} else if ok {
		replyID = int(v)
		allowWithout = fields["allow_sending_without_reply"] == "true"
	}
	if replyID != 0 {
		if m := c.byID[replyID]; m != nil {
			cp := m.msg
			cp.ReplyToMessage = nil
			replyTo = &cp
		} else if !allowWithout {
			return nil, badRequest("message to be replied not found")
		}
	}
	bot := s.bot
	m := s.appendMessage(c, Message{
		From:            &bot,
		Date:            s.now().Unix(),
		Text:            plain,
		MessageThreadID: int(thread),
		IsTopicMessage:  thread != 0 && c.chat.IsForum,
		ReplyToMessage:  replyTo,
	}, true)
	m.raw = fields["text"]
	m.parseMode = fields["parse_mode"]
	s.notify()
	return m.msg, nil
}

// appendMessage stores msg in chat c with the chat's next message id. Call with s.mu held.
func (s *Server) appendMessage(c *chatState, msg Message, fromBot bool) *storedMsg {
	c.nextID++
	msg.MessageID = c.nextID
	msg.Chat = c.chat
	m := &storedMsg{msg: msg, fromBot: fromBot, raw: msg.Text}
	c.msgs = append(c.msgs, m)
	c.byID[msg.MessageID] = m
	return m
}

func (s *Server) editMessageText(fields map[string]string) (any, *Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fields["inline_message_id"] != "" {
		return nil, badRequest("MESSAGE_ID_INVALID")
	}
	c, f := s.resolveChat(fields)
	if f != nil {
		return nil, f
	}
	id, ok, f := intField(fields, "message_id")
	if f != nil {
		return nil, f
	}
	if !ok {
		return nil, badRequest("message identifier is not specified")
	}
	m := c.byID[int(id)]
	if m == nil {
		return nil, badRequest("message to edit not found")
	}
	if !m.fromBot {
		return nil, badRequest("message can't be edited")
	}
	if fields["text"] == "" {
		return nil, badRequest("message text is empty")
	}
	plain, f := renderText(fields["text"], fields["parse_mode"])
	if f != nil {
		return nil, f
	}
	if plain == m.msg.Text && fields["text"] == m.raw {
		return nil, badRequest("message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")
	}
	m.msg.Text = plain
	m.msg.EditDate = s.now().Unix()
	m.raw = fields["text"]
	m.parseMode = fields["parse_mode"]
	m.edits++
	s.notify()
	return m.msg, nil
}

// sendMessageDraft records a preview (Bot API 9.3+): private chats only, a
// non-zero integer draft_id, a text of 1–4096 characters valid in its parse
// mode. Like Telegram it answers true and posts no message.
func (s *Server) sendMessageDraft(fields map[string]string) (any, *Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, f := s.resolveChat(fields)
	if f != nil {
		return nil, f
	}
	if c.chat.Type != "private" {
		return nil, badRequest("TEXTDRAFT_PEER_INVALID")
	}
	id, ok, f := intField(fields, "draft_id")
	if f != nil {
		return nil, f
	}
	if !ok || id == 0 {
		return nil, badRequest("DRAFT_ID_INVALID")
	}
	if fields["text"] == "" {
		return nil, badRequest("message text is empty")
	}
	plain, f := renderText(fields["text"], fields["parse_mode"])
	if f != nil {
		return nil, f
	}
	c.drafts = append(c.drafts, Draft{ChatID: c.chat.ID, DraftID: id, Text: fields["text"], Plain: plain, Time: s.now()})
	s.notify()
	return true, nil
}

var chatActions = map[string]bool{
	"typing": true, "upload_photo": true, "record_video": true, "upload_video": true,
	"record_voice": true, "upload_voice": true, "upload_document": true, "choose_sticker": true,
	"find_location": true, "record_video_note": true, "upload_video_note": true,
}

func (s *Server) sendChatAction(fields map[string]string) (any, *Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, f := s.resolveChat(fields); f != nil {
		return nil, f
	}
	if !chatActions[fields["action"]] {
		return nil, badRequest("wrong parameter action in request")
	}
	return true, nil
}

func (s *Server) getFile(fields map[string]string) (any, *Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.files[fields["file_id"]]
	if f == nil {
		return nil, badRequest("invalid file_id")
	}
	if len(f.data) > 20<<20 {
		return nil, badRequest("file is too big")
	}
	return f.file, nil
}

func validSecret(s string) bool {
	if len(s) == 0 || len(s) > 256 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (s *Server) setWebhook(fields map[string]string) (any, *Failure) {
	u := fields["url"]
	secret := fields["secret_token"]
	if secret != "" && !validSecret(secret) {
		return nil, badRequest("bad webhook: secret token contains unallowed characters")
	}
	if u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return nil, badRequest("bad webhook: Webhook can be set up only on ports 80, 88, 443 or 8443")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.webhookURL, s.webhookSecret = u, secret
	if fields["drop_pending_updates"] == "true" {
		s.queue = nil
	}
	s.pollSeq++ // a running getUpdates is terminated with 409
	s.notify()
	return true, nil
}

func (s *Server) deleteWebhook(fields map[string]string) (any, *Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.webhookURL, s.webhookSecret = "", ""
	if fields["drop_pending_updates"] == "true" {
		s.queue = nil
	}
	s.notify()
	return true, nil
}

func (s *Server) setMyCommands(fields map[string]string) (any, *Failure) {
	var cmds []BotCommand
	if err := json.Unmarshal([]byte(fields["commands"]), &cmds); err != nil {
		return nil, badRequest("can't parse commands JSON object")
	}
	for _, c := range cmds {
		if c.Command == "" || len(c.Command) > 32 || strings.ToLower(c.Command) != c.Command ||
			strings.Trim(c.Command, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
			return nil, badRequest("BOT_COMMAND_INVALID")
		}
		if c.Description == "" || len([]rune(c.Description)) > 256 {
			return nil, badRequest("BOT_COMMAND_DESCRIPTION_INVALID")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commands = cmds
	s.notify()
	return true, nil
}
