package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/switchboard-bot/switchboard/channels"
)

// This file turns room events into channels.Message (mentions, threads,
// replies, media) and answers invites and encrypted rooms.

// msgContent is the content of an m.room.message.
type msgContent struct {
	MsgType       string `json:"msgtype"`
	Body          string `json:"body"`
	Format        string `json:"format"`
	FormattedBody string `json:"formatted_body"`
	FileName      string `json:"filename"`
	URL           string `json:"url"`
	Info          struct {
		MimeType string `json:"mimetype"`
		Size     int64  `json:"size"`
	} `json:"info"`
	Mentions *struct {
		UserIDs []string `json:"user_ids"`
		Room    bool     `json:"room"`
	} `json:"m.mentions"`
	RelatesTo *struct {
		RelType       string `json:"rel_type"`
		EventID       string `json:"event_id"`
		IsFallingBack bool   `json:"is_falling_back"`
		InReplyTo     *struct {
			EventID string `json:"event_id"`
		} `json:"m.in_reply_to"`
	} `json:"m.relates_to"`
}

// handleEvent hands one timeline event on; events that are not messages for
// the bot return nil (they count as handled).
func (a *Adapter) handleEvent(ctx context.Context, sink channels.Sink, roomID string, raw json.RawMessage) error {
	var ev rawEvent
	if err := json.Unmarshal(raw, &ev); err != nil || ev.EventID == "" || ev.Sender == "" {
		a.log.Warn("undecodable event skipped", "room", roomID, "err", err)
		return nil
	}
	a.learnMember(roomID, raw)
	self := a.selfID()
	if ev.Sender == self {
		return nil
	}
	switch ev.Type {
	case "m.room.message":
	case "m.room.encrypted":
		return a.encryptedNotice(ctx, roomID)
	default:
		return nil
	}
	msg, ok := a.normalize(ctx, roomID, &ev)
	if !ok {
		return nil
	}
	return sink.Handle(ctx, msg)
}

// normalize builds the message of an m.room.message event.
func (a *Adapter) normalize(ctx context.Context, roomID string, ev *rawEvent) (channels.Message, bool) {
	var c msgContent
	if err := json.Unmarshal(ev.Content, &c); err != nil {
		a.log.Warn("message with unreadable content skipped", "room", roomID, "event", ev.EventID, "err", err)
		return channels.Message{}, false
	}
	if c.RelatesTo != nil && c.RelatesTo.RelType == "m.replace" {
		a.log.Debug("edit ignored", "room", roomID, "event", ev.EventID)
		return channels.Message{}, false
	}
	msg := channels.Message{
		Channel: Name, ChatID: roomID, MessageID: ev.EventID,
		Sender: channels.Sender{ID: ev.Sender, Name: a.displayName(ev.Sender), IsBot: c.MsgType == "m.notice"},
		Direct: a.isDirect(ctx, roomID), Time: time.UnixMilli(ev.TS),
	}
	if ev.TS <= 0 {
		msg.Time = time.Now()
	}
	if r := c.RelatesTo; r != nil {
		if r.RelType == "m.thread" && r.EventID != "" {
			msg.ThreadID = r.EventID
		}
		if r.InReplyTo != nil && r.InReplyTo.EventID != "" && !r.IsFallingBack {
			msg.ReplyTo = r.InReplyTo.EventID
		}
	}
	text := c.Body
	switch c.MsgType {
	case "m.text", "m.notice", "m.emote", "":
		if c.MsgType == "" && c.Body == "" {
			return channels.Message{}, false
		}
		if c.RelatesTo != nil && c.RelatesTo.InReplyTo != nil {
			text = stripReplyFallback(text)
		}
	case "m.image", "m.file", "m.audio", "m.video":
		text = ""
		// Since v1.10 body is a caption when filename is set and differs.
		if c.FileName != "" && c.Body != c.FileName {
			text = c.Body
		}
		if m, ok := a.download(ctx, roomID, ev.EventID, &c); ok {
			msg.Media = []channels.Media{m}
		}
	default:
		a.log.Debug("message type ignored", "room", roomID, "msgtype", c.MsgType)
		return channels.Message{}, false
	}
	msg.Mentioned, msg.Text = a.mentioned(&c, msg.ReplyTo, text)
	return msg, true
}

// mentioned reports whether c addresses the bot and returns text without
// a leading mention.
func (a *Adapter) mentioned(c *msgContent, replyTo, text string) (bool, string) {
	self, name := a.selfID(), a.displayNameOwn()
	m := false
	if c.Mentions != nil {
		m = slices.Contains(c.Mentions.UserIDs, self)
	} else {
		low := strings.ToLower(text)
		m = strings.Contains(low, strings.ToLower(self)) || (name != "" && containsWord(low, strings.ToLower(name)))
	}
	if !m && replyTo != "" {
		a.mu.Lock()
		m = a.sent[replyTo]
		a.mu.Unlock()
	}
	if m {
		text = stripMention(text, self, name)
	}
	return m, text
}

// stripMention removes a leading "Name:", "Name,", "@user:server:" or
// "@user:server" from text.
func stripMention(text, self, name string) string {
	t := strings.TrimSpace(text)
	for _, p := range []string{self, name, "@" + name} {
		if p == "" || len(t) < len(p) || !strings.EqualFold(t[:len(p)], p) {
			continue
		}
		rest := t[len(p):]
		if rest != "" && !strings.ContainsAny(rest[:1], ":, \t\n") {
			continue // a longer word
		}
		rest = strings.TrimLeft(rest, ":,")
		return strings.TrimSpace(rest)
	}
	return t
}

// containsWord reports whether w occurs in s not inside a longer word.
func containsWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		before := j == 0 || !isWordByte(s[j-1])
		after := j+len(w) == len(s) || !isWordByte(s[j+len(w)])
		if before && after {
			return true
		}
		i = j + 1
	}
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}

// replyFallback matches the legacy reply fallback at the start of a body:
// quoted lines ("> <@user:server> …") and the blank line after them.
var replyFallback = regexp.MustCompile(`\A(?:>[^\n]*\n)+\n?`)

func stripReplyFallback(body string) string {
	if !strings.HasPrefix(body, "> ") {
		return body
	}
	return replyFallback.ReplaceAllString(body, "")
}

// download fetches an attachment through the authenticated media API,
// within MaxMediaBytes; failures drop the attachment (logged).
func (a *Adapter) download(ctx context.Context, roomID, eventID string, c *msgContent) (channels.Media, bool) {
	limit := a.opts.MaxMediaBytes
	warn := func(why string, args ...any) {
		a.log.Warn("attachment dropped: "+why, append([]any{"room", roomID, "event", eventID}, args...)...)
	}
	if limit < 0 {
		return channels.Media{}, false
	}
	uri, err := id.ParseContentURI(c.URL)
	if err != nil || uri.IsEmpty() {
		warn("no usable mxc:// URL (an encrypted file?)")
		return channels.Media{}, false
	}
	if c.Info.Size > limit {
		warn("larger than the limit", "size", c.Info.Size, "limit", limit)
		return channels.Media{}, false
	}
	cctx, cancel := context.WithTimeout(ctx, a.opts.RequestTimeout)
	defer cancel()
	resp, err := a.cli.Download(cctx, uri)
	if err != nil {
		warn("download failed", "err", err)
		return channels.Media{}, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		warn("download failed", "status", resp.StatusCode)
		return channels.Media{}, false
	}
	if resp.ContentLength > limit {
		warn("larger than the limit", "size", resp.ContentLength, "limit", limit)
		return channels.Media{}, false
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		warn("download failed", "err", err)
		return channels.Media{}, false
	}
	if int64(len(data)) > limit {
		warn("larger than the limit", "limit", limit)
		return channels.Media{}, false
	}
	mime := c.Info.MimeType
	if mime == "" {
		mime = resp.Header.Get("Content-Type")
	}
	if mime == "" {
		mime = http.DetectContentType(data)
	}
	name := c.FileName
	if name == "" {
		name = c.Body
	}
	return channels.Media{MIME: mime, Name: name, Data: data}, true
}

// handleInvite joins an invite the sink admits and declines the others.
func (a *Adapter) handleInvite(ctx context.Context, sink channels.Sink, roomID string, r invitedRoom) error {
	self := a.selfID()
	var inviter string
	var direct, conflict bool
	for _, raw := range r.InviteState.Events {
		var ev rawEvent
		if json.Unmarshal(raw, &ev) != nil || ev.Type != "m.room.member" || ev.StateKey == nil || *ev.StateKey != self {
			continue
		}
		var c struct {
			Membership string `json:"membership"`
			IsDirect   bool   `json:"is_direct"`
		}
		if json.Unmarshal(ev.Content, &c) == nil && c.Membership == "invite" {
			if inviter != "" && inviter != ev.Sender {
				// Stripped state is the inviting server's, unsigned: two
				// inviters mean one is forged, and which is unknowable.
				conflict = true
			}
			inviter, direct = ev.Sender, c.IsDirect
		}
	}
	if inviter == "" {
		return nil // not an invite of ours (or already answered)
	}
	admitted := false
	if conflict {
		a.log.Warn("invite declined: its state names more than one inviter (forged by the inviting server?)", "room", roomID)
	} else if ad, ok := sink.(channels.Admitter); ok {
		var err error
		if admitted, err = ad.Admits(ctx, Name, inviter, direct); err != nil {
			return err
		}
	} else {
		a.log.Warn("invite declined: the handler cannot tell who may talk to the bot", "room", roomID, "inviter", inviter)
	}
	cctx, cancel := context.WithTimeout(ctx, a.opts.RequestTimeout)
	defer cancel()
	if !admitted {
		a.log.Info("invite declined: the inviter is not allowed", "room", roomID, "inviter", inviter, "direct", direct)
		if _, err := a.cli.LeaveRoom(cctx, id.RoomID(roomID)); err != nil && !isClientError(err) {
			return fmt.Errorf("decline: %w", err)
		}
		return nil
	}
	if _, err := a.cli.JoinRoomByID(cctx, id.RoomID(roomID)); err != nil {
		if isClientError(err) {
			a.log.Warn("invite could not be joined", "room", roomID, "err", err)
			return nil
		}
		return fmt.Errorf("join: %w", err)
	}
	a.log.Info("invite joined", "room", roomID, "inviter", inviter, "direct", direct)
	if direct {
		a.mu.Lock()
		a.direct[roomID] = true
		a.mu.Unlock()
		if err := a.addDirect(cctx, inviter, roomID); err != nil {
			a.log.Warn("m.direct not updated; the room is direct until restart", "room", roomID, "err", err)
		}
	}
	return nil
}

// encryptedNotice tells an encrypted room, once, that the bot cannot read
// it. The transaction id is the room's, so a repeat is a no-op.
func (a *Adapter) encryptedNotice(ctx context.Context, roomID string) error {
	a.mu.Lock()
	done := a.noticed[roomID]
	a.mu.Unlock()
	key := a.kvKey("e2ee-notice") + "/" + roomID
	if !done && a.opts.KV != nil {
		_, ok, err := a.opts.KV.KVGet(ctx, key)
		if err != nil {
			return err
		}
		done = ok
	}
	if done {
		return nil
	}
	content := map[string]any{"msgtype": "m.notice", "body": EncryptedNotice, "m.mentions": map[string]any{}}
	cctx, cancel := context.WithTimeout(ctx, a.opts.RequestTimeout)
	defer cancel()
	_, err := a.cli.SendMessageEvent(cctx, id.RoomID(roomID), eventMessage, content,
		mautrix.ReqSendEvent{TransactionID: txnID("", "e2ee-notice/"+roomID)})
	if err != nil && !isClientError(err) {
		return fmt.Errorf("encrypted-room notice: %w", err)
	}
	a.mu.Lock()
	a.noticed[roomID] = true
	a.mu.Unlock()
	if a.opts.KV != nil {
		if err := a.opts.KV.KVPut(ctx, key, []byte("1")); err != nil {
			a.log.Warn("encrypted-room notice not recorded", "room", roomID, "err", err)
		}
	}
	a.log.Info("encrypted room told the bot cannot read it", "room", roomID)
	return nil
}

func (a *Adapter) selfID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.self
}

func (a *Adapter) displayNameOwn() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.name
}

// isClientError reports a 4xx answer other than 429 (retrying cannot help).
func isClientError(err error) bool {
	var he mautrix.HTTPError
	if errors.As(err, &he) && he.Response != nil {
		c := he.Response.StatusCode
		return c >= 400 && c < 500 && c != http.StatusTooManyRequests
	}
	return false
}
