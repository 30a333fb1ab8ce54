package fakematrix

import (
	"encoding/json"
	"fmt"
	"html"
	"strings"
)

// Room describes a room of the fake.
type Room struct {
	ID        string   // "!abc:fake.test"
	Members   []string // user ids besides the bot
	Joined    bool     // the bot is already a member
	Direct    bool     // listed in the bot's m.direct (under Members[0])
	Encrypted bool     // m.room.encryption is set: users' messages arrive as m.room.encrypted
}

// AddRoom creates a room.
func (s *Server) AddRoom(r Room) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rooms[r.ID] = &room{id: r.ID, joined: r.Joined, encrypted: r.Encrypted, members: r.Members}
	for _, m := range r.Members {
		if _, ok := s.names[m]; !ok {
			s.names[m] = localpart(m)
		}
		s.memberLocked(r.ID, m)
	}
	if r.Direct && len(r.Members) > 0 {
		direct := map[string][]string{}
		if raw, ok := s.acct["m.direct"]; ok {
			_ = json.Unmarshal(raw, &direct)
		}
		direct[r.Members[0]] = append(direct[r.Members[0]], r.ID)
		raw, _ := json.Marshal(direct)
		s.setAccountDataLocked("m.direct", raw)
	}
	s.notifyLocked()
}

// Invite has inviter invite the bot to roomID (created when new).
func (s *Server) Invite(roomID, inviter string, isDirect bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rooms[roomID] == nil {
		s.rooms[roomID] = &room{id: roomID, members: []string{inviter}}
	}
	s.stream = append(s.stream, entry{kind: "invite", room: roomID, inviter: inviter, direct: isDirect})
	s.notifyLocked()
}

// InviteWithState is Invite with stripped state events the inviting
// (possibly hostile, federated) server adds to the invite.
func (s *Server) InviteWithState(roomID, inviter string, isDirect bool, stripped ...json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rooms[roomID] == nil {
		s.rooms[roomID] = &room{id: roomID, members: []string{inviter}}
	}
	s.stream = append(s.stream, entry{kind: "invite", room: roomID, inviter: inviter, direct: isDirect, stripped: stripped})
	s.notifyLocked()
}

// Join makes user a member of roomID (an m.room.member join event).
func (s *Server) Join(roomID, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rm := s.rooms[roomID]
	if rm == nil {
		return
	}
	rm.members = append(rm.members, user)
	if _, ok := s.names[user]; !ok {
		s.names[user] = localpart(user)
	}
	s.memberLocked(roomID, user)
}

// Joined reports whether the bot is a member of roomID.
func (s *Server) Joined(roomID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rm := s.rooms[roomID]
	return rm != nil && rm.joined
}

// Left reports whether the bot declined an invite to (or left) roomID.
func (s *Server) Left(roomID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rm := s.rooms[roomID]
	return rm != nil && rm.left
}

// AccountData returns the bot's account data of typ (nil when unset).
func (s *Server) AccountData(typ string) json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acct[typ]
}

// Event is one event a user posted.
type Event struct {
	Room    string
	EventID string
	Sender  string
	raw     json.RawMessage
}

// SayOption changes a message a user posts.
type SayOption func(c map[string]any)

// InThread posts the message in the thread of root.
func InThread(root string) SayOption {
	return func(c map[string]any) {
		c["m.relates_to"] = map[string]any{"rel_type": "m.thread", "event_id": root, "is_falling_back": true,
			"m.in_reply_to": map[string]any{"event_id": root}}
	}
}

// ReplyTo posts the message as a reply to eventID, mentioning its sender
// as clients do.
func ReplyTo(eventID, sender string) SayOption {
	return func(c map[string]any) {
		c["m.relates_to"] = map[string]any{"m.in_reply_to": map[string]any{"event_id": eventID}}
		c["m.mentions"] = map[string]any{"user_ids": []string{sender}}
	}
}

// AsNotice posts an m.notice (what bots send).
func AsNotice() SayOption { return func(c map[string]any) { c["msgtype"] = "m.notice" } }

// Content sets a content key.
func Content(key string, v any) SayOption { return func(c map[string]any) { c[key] = v } }

// UserSays posts text as user in roomID (m.text, with an empty m.mentions).
func (s *Server) UserSays(roomID, user, text string, opts ...SayOption) Event {
	c := map[string]any{"msgtype": "m.text", "body": text, "m.mentions": map[string]any{}}
	for _, o := range opts {
		o(c)
	}
	return s.post(roomID, user, "m.room.message", c)
}

// UserMentions posts text as user in roomID mentioning the bot the way
// Element does: a pill in formatted_body, "Name: text" in body, the bot in
// m.mentions.
func (s *Server) UserMentions(roomID, user, text string, opts ...SayOption) Event {
	name := s.opts.DisplayName
	c := map[string]any{
		"msgtype": "m.text", "body": name + ": " + text,
		"format": "org.matrix.custom.html",
		"formatted_body": fmt.Sprintf(`<a href="https://matrix.to/#/%s">%s</a>: %s`,
			s.opts.UserID, html.EscapeString(name), html.EscapeString(text)),
		"m.mentions": map[string]any{"user_ids": []string{s.opts.UserID}},
	}
	for _, o := range opts {
		o(c)
	}
	return s.post(roomID, user, "m.room.message", c)
}

// Upload stores data as media and returns its mxc:// URI.
func (s *Server) Upload(mime string, data []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	mediaID := fmt.Sprintf("media%06d", s.seq)
	s.media[ServerName+"/"+mediaID] = mediaFile{mime: mime, data: append([]byte(nil), data...)}
	return "mxc://" + ServerName + "/" + mediaID
}

// UserSendsImage uploads data and posts it as an m.image with caption.
func (s *Server) UserSendsImage(roomID, user, caption, mime string, data []byte) Event {
	c := map[string]any{"msgtype": "m.image", "body": caption, "filename": "photo.jpg",
		"url":  s.Upload(mime, data),
		"info": map[string]any{"mimetype": mime, "size": len(data)}, "m.mentions": map[string]any{}}
	if caption == "" {
		c["body"] = "photo.jpg"
	}
	return s.post(roomID, user, "m.room.message", c)
}

// Raw posts an event of typ with the given content as user (attacks,
// unusual payloads).
func (s *Server) Raw(roomID, user, typ string, content json.RawMessage) Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.appendLocked(roomID, user, typ, content, nil)
	return Event{Room: roomID, EventID: id, Sender: user, raw: s.stream[len(s.stream)-1].event}
}

func (s *Server) post(roomID, user, typ string, c map[string]any) Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	rm := s.rooms[roomID]
	if rm != nil && rm.encrypted && user != s.opts.UserID {
		typ = "m.room.encrypted"
		c = map[string]any{"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "AwgAEnAC…", "session_id": "sess", "device_id": "DEV"}
	}
	raw, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	id := s.appendLocked(roomID, user, typ, raw, nil)
	return Event{Room: roomID, EventID: id, Sender: user, raw: s.stream[len(s.stream)-1].event}
}

// Redeliver puts ev into the stream again (the same event_id), as a sync
// after a lost response does.
func (s *Server) Redeliver(ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stream = append(s.stream, entry{kind: "timeline", room: ev.Room, event: ev.raw})
	s.notifyLocked()
}

// SentMessage is a message the bot posted, as it reads now (edits applied).
type SentMessage struct {
	EventID       string
	MsgType       string
	Body          string
	Format        string
	FormattedBody string
	RelatesTo     map[string]any
	Mentions      json.RawMessage
	Edits         int
}

type msgContent struct {
	MsgType       string          `json:"msgtype"`
	Body          string          `json:"body"`
	Format        string          `json:"format"`
	FormattedBody string          `json:"formatted_body"`
	RelatesTo     map[string]any  `json:"m.relates_to"`
	Mentions      json.RawMessage `json:"m.mentions"`
	NewContent    *msgContent     `json:"m.new_content"`
}

// Sent returns the bot's messages in roomID, oldest first, edits applied.
func (s *Server) Sent(roomID string) []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SentMessage
	byID := map[string]int{}
	for _, e := range s.stream {
		if e.kind != "timeline" || e.room != roomID {
			continue
		}
		var ev event
		if json.Unmarshal(e.event, &ev) != nil || ev.Sender != s.opts.UserID || ev.Type != "m.room.message" {
			continue
		}
		var c msgContent
		if json.Unmarshal(ev.Content, &c) != nil {
			continue
		}
		if rel, _ := c.RelatesTo["rel_type"].(string); rel == "m.replace" && c.NewContent != nil {
			target, _ := c.RelatesTo["event_id"].(string)
			if i, ok := byID[target]; ok {
				n := c.NewContent
				out[i].Body, out[i].Format, out[i].FormattedBody, out[i].MsgType = n.Body, n.Format, n.FormattedBody, n.MsgType
				out[i].Edits++
			}
			continue
		}
		byID[ev.EventID] = len(out)
		out = append(out, SentMessage{EventID: ev.EventID, MsgType: c.MsgType, Body: c.Body, Format: c.Format,
			FormattedBody: c.FormattedBody, RelatesTo: c.RelatesTo, Mentions: c.Mentions})
	}
	return out
}

// Typing returns the typing signals (typing: true) the bot sent for
// roomID and whether it shows now.
func (s *Server) Typing(roomID string) (signals int, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ts := s.typing[roomID]; ts != nil {
		return ts.signals, ts.on
	}
	return 0, false
}

// FailNext makes the next n calls of endpoint ("send", "sync", "typing",
// "join", "whoami", "download", …) answer f.
func (s *Server) FailNext(endpoint string, n int, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.fails[endpoint] = append(s.fails[endpoint], f)
	}
}

// RateLimited is the 429 answer asking to retry after ms milliseconds.
func RateLimited(ms int) Failure {
	return Failure{Status: 429, ErrCode: "M_LIMIT_EXCEEDED", Message: "Too Many Requests", RetryAfterMS: ms}
}

// Requests returns the calls whose path contains part.
func (s *Server) Requests(part string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if strings.Contains(r.Path, part) {
			out = append(out, r)
		}
	}
	return out
}

// SetDisplayName sets a user's display name: the profile, and a new
// m.room.member event in each room the user is in, as servers do.
func (s *Server) SetDisplayName(user, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names[user] = name
	for id, rm := range s.rooms {
		for _, m := range rm.members {
			if m == user {
				s.memberLocked(id, user)
			}
		}
	}
}

// memberLocked posts user's m.room.member join event in roomID.
func (s *Server) memberLocked(roomID, user string) {
	content, _ := json.Marshal(map[string]any{"membership": "join", "displayname": s.names[user]})
	s.appendLocked(roomID, user, "m.room.member", content, &user)
}

func localpart(user string) string {
	l, _, _ := strings.Cut(strings.TrimPrefix(user, "@"), ":")
	return l
}
