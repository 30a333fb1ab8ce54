package faketelegram

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/switchboard-bot/switchboard/internal/testkit"
	"net/http"
	"sort"
	"strconv"
	"testing"
	"time"
	"unicode/utf16"
)

// DefaultGroupUser is who speaks in groups when no From option is given.
func DefaultGroupUser() User {
	return User{ID: 1000001, FirstName: "Alice", LastName: "Liddell", Username: "alice"}
}

type sayConfig struct {
	chatType    string
	title       string
	forum       bool
	thread      int
	from        *User
	senderChat  *Chat
	replyTo     int
	entities    []MessageEntity
	hasEntities bool
	date        time.Time
	extra       map[string]json.RawMessage
}

// SayOption adjusts a message a user sends.
type SayOption func(*sayConfig)

// From sets the sender (default: the private chat's user, or DefaultGroupUser).
func From(u User) SayOption { return func(c *sayConfig) { c.from = &u } }

// AsChat sends on behalf of a chat (anonymous group admin, linked channel):
// from is Telegram's GroupAnonymousBot and sender_chat is ch.
func AsChat(ch Chat) SayOption { return func(c *sayConfig) { c.senderChat = &ch } }

// InGroup makes a new chat a basic group with the given title.
func InGroup(title string) SayOption {
	return func(c *sayConfig) { c.chatType, c.title = "group", title }
}

// InSupergroup makes a new chat a supergroup with the given title.
func InSupergroup(title string) SayOption {
	return func(c *sayConfig) { c.chatType, c.title = "supergroup", title }
}

// InTopic posts into forum topic threadID (see CreateTopic); the chat becomes a
// forum supergroup.
func InTopic(threadID int) SayOption {
	return func(c *sayConfig) { c.chatType, c.forum, c.thread = "supergroup", true, threadID }
}

// ReplyTo makes the message a reply to message id in the same chat (a user's or the bot's).
func ReplyTo(messageID int) SayOption { return func(c *sayConfig) { c.replyTo = messageID } }

// Entities sets the entities explicitly instead of detecting mentions and commands.
func Entities(e ...MessageEntity) SayOption {
	return func(c *sayConfig) { c.entities, c.hasEntities = e, true }
}

// SentAt sets the message date.
func SentAt(t time.Time) SayOption { return func(c *sayConfig) { c.date = t } }

// WithFields adds Bot API message fields the fake does not model
// (forward_origin, reply_markup, link_preview_options, …), verbatim, as
// Telegram would send them.
func WithFields(fields map[string]json.RawMessage) SayOption {
	return func(c *sayConfig) { c.extra = fields }
}

// AddChat registers a chat the bot can talk to without a user having spoken.
func (s *Server) AddChat(ch Chat) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chatLocked(ch.ID, &sayConfig{chatType: ch.Type, title: ch.Title, forum: ch.IsForum})
	if ch.Username != "" {
		s.chats[ch.ID].chat.Username = ch.Username
	}
}

// chatLocked returns chat id, creating it from cfg if new. Call with s.mu held.
func (s *Server) chatLocked(id int64, cfg *sayConfig) *chatState {
	c := s.chats[id]
	if c == nil {
		ch := Chat{ID: id}
		switch {
		case id > 0:
			ch.Type, ch.FirstName = "private", "User"
		case cfg.chatType != "":
			ch.Type, ch.Title = cfg.chatType, cfg.title
		default:
			ch.Type, ch.Title = "group", "Group "+strconv.FormatInt(-id, 10)
		}
		if ch.Type != "private" && ch.Title == "" {
			ch.Title = "Group " + strconv.FormatInt(-id, 10)
		}
		c = &chatState{chat: ch, byID: map[int]*storedMsg{}}
		s.chats[id] = c
	}
	if cfg.forum && !c.chat.IsForum {
		c.chat.Type, c.chat.IsForum = "supergroup", true
	}
	return c
}

// CreateTopic creates a forum topic in chat and returns its message_thread_id
// (the id of the "topic created" service message, as on Telegram).
func (s *Server) CreateTopic(chatID int64, name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chatLocked(chatID, &sayConfig{chatType: "supergroup", forum: true})
	u := DefaultGroupUser()
	m := s.appendMessage(c, Message{From: &u, Date: s.now().Unix(), ForumTopicCreated: &ForumTopicCreated{Name: name, IconColor: 7322096}}, false)
	m.msg.MessageThreadID = m.msg.MessageID
	m.msg.IsTopicMessage = true
	return m.msg.MessageID
}

// UserSays enqueues a text message from a user in chat chatID (positive:
// private chat with that user; negative: a group) and returns it.
func (s *Server) UserSays(chatID int64, text string, opts ...SayOption) Message {
	return s.userMessage(chatID, Message{Text: text}, opts, true)
}

// UserSendsPhoto uploads jpeg as a photo (Telegram offers a small thumbnail
// and the full size) with an optional caption and enqueues the message.
func (s *Server) UserSendsPhoto(chatID int64, jpeg []byte, caption string, opts ...SayOption) Message {
	thumb := s.AddFile(jpeg[:min(len(jpeg), 16)], "")
	full := s.AddFile(jpeg, "")
	return s.userMessage(chatID, Message{
		Caption: caption,
		Photo: []PhotoSize{
			{FileID: thumb.FileID, FileUniqueID: thumb.FileUniqueID, Width: 90, Height: 60, FileSize: int(thumb.FileSize)},
			{FileID: full.FileID, FileUniqueID: full.FileUniqueID, Width: 1280, Height: 853, FileSize: int(full.FileSize)},
		},
	}, opts, true)
}

func (s *Server) userMessage(chatID int64, msg Message, opts []SayOption, enqueue bool) Message {
	cfg := &sayConfig{}
	for _, o := range opts {
		o(cfg)
	}
	s.mu.Lock()
	c := s.chatLocked(chatID, cfg)
	from := cfg.from
	if from == nil {
		if c.chat.Type == "private" {
			from = &User{ID: chatID, FirstName: "User", Username: "user" + strconv.FormatInt(chatID, 10)}
		} else {
			u := DefaultGroupUser()
			from = &u
		}
	}
	if cfg.senderChat != nil {
		from = &User{ID: 1087968824, IsBot: true, FirstName: "Group", Username: "GroupAnonymousBot"}
		msg.SenderChat = cfg.senderChat
	}
	msg.From = from
	msg.Extra = cfg.extra
	date := cfg.date
	if date.IsZero() {
		date = s.now()
	}
	msg.Date = date.Unix()
	body := msg.Text
	if body == "" {
		body = msg.Caption
	}
	ents := cfg.entities
	if !cfg.hasEntities {
		ents = DetectEntities(body)
	}
	if msg.Text != "" {
		msg.Entities = ents
	} else {
		msg.CaptionEntities = ents
	}
	if cfg.thread != 0 {
		msg.MessageThreadID = cfg.thread
		msg.IsTopicMessage = true
		// Telegram marks every message in a topic as a reply to the topic's
		// creation message unless it replies to something else.
		if root := c.byID[cfg.thread]; root != nil && cfg.replyTo == 0 {
			cp := root.msg
			cp.ReplyToMessage = nil
			msg.ReplyToMessage = &cp
		}
	}
	if cfg.replyTo != 0 {
		if r := c.byID[cfg.replyTo]; r != nil {
			cp := r.msg
			cp.ReplyToMessage = nil
			msg.ReplyToMessage = &cp
		}
	}
	m := s.appendMessage(c, msg, false)
	out := m.msg
	if enqueue {
		s.enqueueLocked(Update{Message: &out})
	}
	s.mu.Unlock()
	return out
}

// UserEdits edits a user's message and enqueues the edited_message update.
func (s *Server) UserEdits(chatID int64, messageID int, newText string) (Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats[chatID]
	if c == nil || c.byID[messageID] == nil {
		return Message{}, fmt.Errorf("faketelegram: no message %d in chat %d", messageID, chatID)
	}
	m := c.byID[messageID]
	m.msg.Text = newText
	m.msg.Entities = DetectEntities(newText)
	m.msg.EditDate = s.now().Unix()
	m.edits++
	out := m.msg
	s.enqueueLocked(Update{EditedMessage: &out})
	return out, nil
}

// SendUpdate enqueues u for getUpdates, assigning the next update_id when
// u.UpdateID is 0; enqueuing the same id again (a redelivery) is allowed.
// It returns the update id.
func (s *Server) SendUpdate(u Update) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enqueueLocked(u)
}

func (s *Server) enqueueLocked(u Update) int64 {
	if u.UpdateID == 0 {
		s.nextUpdateID++
		u.UpdateID = s.nextUpdateID
	} else if u.UpdateID > s.nextUpdateID {
		s.nextUpdateID = u.UpdateID
	}
	raw, err := json.Marshal(u)
	if err != nil {
		panic(fmt.Sprintf("faketelegram: marshal update: %v", err))
	}
	s.queue = append(s.queue, queued{id: u.UpdateID, raw: raw})
	sort.SliceStable(s.queue, func(i, j int) bool { return s.queue[i].id < s.queue[j].id })
	s.notify()
	return u.UpdateID
}

// AddFile stores data as a downloadable file (getFile + /file/bot<token>/<path>).
// path defaults to "photos/file_<n>.jpg".
func (s *Server) AddFile(data []byte, path string) File {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextFile++
	if path == "" {
		path = fmt.Sprintf("photos/file_%d.jpg", s.nextFile)
	}
	f := File{
		FileID:       fmt.Sprintf("AgACAgIAAxkBAAI%06d", s.nextFile),
		FileUniqueID: fmt.Sprintf("AQAD%06d", s.nextFile),
		FileSize:     int64(len(data)),
		FilePath:     path,
	}
	sf := &storedFile{file: f, data: append([]byte(nil), data...)}
	s.files[f.FileID] = sf
	s.filesByPath[path] = sf
	return f
}

// FailNext makes the next n calls of method answer f.
func (s *Server) FailNext(method string, n int, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := toLower(method)
	for range n {
		s.failures[key] = append(s.failures[key], f)
	}
}

// Block makes every call addressed to chatID answer 403 (the user blocked the
// bot, or the bot was kicked from the group) until Unblock.
func (s *Server) Block(chatID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blocked[chatID] = true
}

// Unblock undoes Block.
func (s *Server) Unblock(chatID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.blocked, chatID)
}

// MigrateChat upgrades group from to supergroup to: calls addressed to from
// answer 400 with parameters.migrate_to_chat_id = to.
func (s *Server) MigrateChat(from, to int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.chats[from]
	title := ""
	if old != nil {
		title = old.chat.Title
	}
	s.chatLocked(to, &sayConfig{chatType: "supergroup", title: title})
	s.migrated[from] = to
}

// Draft is one sendMessageDraft preview the bot showed.
type Draft struct {
	ChatID  int64
	DraftID int64
	Text    string // as sent (markup included)
	Plain   string // what the user saw
	Time    time.Time
}

// Drafts returns the previews the bot showed in chatID, oldest first.
// Previews never become messages: Sent does not list them.
func (s *Server) Drafts(chatID int64) []Draft {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.chats[chatID]; c != nil {
		return append([]Draft(nil), c.drafts...)
	}
	return nil
}

// Sent returns the bot's messages in chatID, oldest first, as they read now.
func (s *Server) Sent(chatID int64) []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sentLocked(chatID)
}

func (s *Server) sentLocked(chatID int64) []SentMessage {
	c := s.chats[chatID]
	if c == nil {
		return nil
	}
	var out []SentMessage
	for _, m := range c.msgs {
		if !m.fromBot {
			continue
		}
		sm := SentMessage{
			ChatID: chatID, MessageID: m.msg.MessageID, ThreadID: m.msg.MessageThreadID,
			Text: m.raw, ParseMode: m.parseMode, Plain: m.msg.Text, Edits: m.edits,
			Date: time.Unix(m.msg.Date, 0), Voice: m.msg.Voice != nil,
		}
		if m.msg.ReplyToMessage != nil {
			sm.ReplyToMessageID = m.msg.ReplyToMessage.MessageID
		}
		out = append(out, sm)
	}
	return out
}

// WaitSent waits until the bot has at least n messages in chatID and returns them.
func (s *Server) WaitSent(t testing.TB, chatID int64, n int, timeout time.Duration) []SentMessage {
	t.Helper()
	var out []SentMessage
	s.waitFor(t, timeout, fmt.Sprintf("%d bot message(s) in chat %d", n, chatID), func() bool {
		out = s.sentLocked(chatID)
		return len(out) >= n
	})
	return out
}

// Requests returns the calls of method received so far ("" = all), oldest first.
func (s *Server) Requests(method string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requestsLocked(method)
}

func (s *Server) requestsLocked(method string) []Request {
	var out []Request
	for _, r := range s.requests {
		if method == "" || toLower(r.Method) == toLower(method) {
			out = append(out, r)
		}
	}
	return out
}

// AwaitRequests blocks until at least n calls of method arrived and reports
// true, or until ctx ends (false). Unlike WaitRequests it needs no
// testing.TB, so a fake model's responder can wait on the bot's calls
// ("answer only once typing is shown").
func (s *Server) AwaitRequests(ctx context.Context, method string, n int) bool {
	for {
		s.mu.Lock()
		got, ch := len(s.requestsLocked(method)), s.changed
		s.mu.Unlock()
		if got >= n {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-ch:
		}
	}
}

// WaitRequests waits until at least n calls of method arrived and returns them.
func (s *Server) WaitRequests(t testing.TB, method string, n int, timeout time.Duration) []Request {
	t.Helper()
	var out []Request
	s.waitFor(t, timeout, fmt.Sprintf("%d %s call(s)", n, method), func() bool {
		out = s.requestsLocked(method)
		return len(out) >= n
	})
	return out
}

// Conflicts is how many getUpdates calls were terminated by a newer one
// (409 "Conflict: terminated by other getUpdates request"): more than one
// poller at a time.
func (s *Server) Conflicts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conflicts
}

// Deliveries is how many times getUpdates returned update id.
func (s *Server) Deliveries(updateID int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deliveries[updateID]
}

// WaitDelivered waits until getUpdates returned update id at least n times.
func (s *Server) WaitDelivered(t testing.TB, updateID int64, n int, timeout time.Duration) {
	t.Helper()
	s.waitFor(t, timeout, fmt.Sprintf("update %d delivered %d time(s)", updateID, n), func() bool {
		return s.deliveries[updateID] >= n
	})
}

// Confirmed reports whether update id was delivered and then confirmed
// (a later getUpdates carried a higher offset).
func (s *Server) Confirmed(updateID int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.confirmedLocked(updateID)
}

func (s *Server) confirmedLocked(id int64) bool {
	if s.deliveries[id] == 0 {
		return false
	}
	for _, q := range s.queue {
		if q.id == id {
			return false
		}
	}
	return true
}

// WaitConfirmed waits until update id is confirmed.
func (s *Server) WaitConfirmed(t testing.TB, updateID int64, timeout time.Duration) {
	t.Helper()
	s.waitFor(t, timeout, fmt.Sprintf("update %d confirmed", updateID), func() bool {
		return s.confirmedLocked(updateID)
	})
}

// Pending is the number of unconfirmed updates.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Webhook returns the URL and secret set by setWebhook ("" when none).
func (s *Server) Webhook() (url, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.webhookURL, s.webhookSecret
}

// WaitWebhook waits until a webhook is set and returns its URL and secret.
func (s *Server) WaitWebhook(t testing.TB, timeout time.Duration) (url, secret string) {
	t.Helper()
	s.waitFor(t, timeout, "setWebhook", func() bool {
		url, secret = s.webhookURL, s.webhookSecret
		return url != ""
	})
	return url, secret
}

// Commands returns the commands registered with setMyCommands.
func (s *Server) Commands() []BotCommand {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]BotCommand(nil), s.commands...)
}

// PostWebhook POSTs u to url the way Telegram delivers webhook updates, with
// the X-Telegram-Bot-Api-Secret-Token header when secret is not empty, and
// returns the HTTP status. u.UpdateID 0 takes the next id.
func (s *Server) PostWebhook(ctx context.Context, url, secret string, u Update) (int, error) {
	if u.UpdateID == 0 {
		s.mu.Lock()
		s.nextUpdateID++
		u.UpdateID = s.nextUpdateID
		s.mu.Unlock()
	}
	body, err := json.Marshal(u)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// DeliverWebhook POSTs u to the webhook set with setWebhook, with its secret.
func (s *Server) DeliverWebhook(ctx context.Context, u Update) (int, error) {
	url, secret := s.Webhook()
	if url == "" {
		return 0, fmt.Errorf("faketelegram: no webhook set")
	}
	return s.PostWebhook(ctx, url, secret, u)
}

// NewMessage builds and stores a message from a user in chatID like UserSays,
// without enqueuing it for getUpdates (for webhook delivery with DeliverWebhook).
func (s *Server) NewMessage(chatID int64, text string, opts ...SayOption) Message {
	return s.userMessage(chatID, Message{Text: text}, opts, false)
}

func (s *Server) waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testkit.WaitUntil(t, timeout, 0, "faketelegram: "+what, func() (bool, <-chan struct{}) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return cond(), s.changed
	})
}

// DetectEntities finds what Telegram marks up by itself in a user's text:
// @username mentions and /commands (optionally /command@bot), with offsets
// and lengths in UTF-16 code units.
func DetectEntities(text string) []MessageEntity {
	var out []MessageEntity
	runes := []rune(text)
	pos := 0 // UTF-16 offset of runes[i]
	wordChar := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_'
	}
	for i := 0; i < len(runes); {
		r := runes[i]
		prevOK := i == 0 || !wordChar(runes[i-1]) && runes[i-1] != '/' && runes[i-1] != '@'
		if (r == '@' || r == '/') && prevOK {
			j := i + 1
			for j < len(runes) && wordChar(runes[j]) {
				j++
			}
			name := j - i - 1
			typ := ""
			switch {
			case r == '@' && name >= 5 && name <= 32:
				typ = "mention"
			case r == '/' && name >= 1 && name <= 32 && (i == 0 || runes[i-1] == ' ' || runes[i-1] == '\n'):
				typ = "bot_command"
				if j < len(runes) && runes[j] == '@' {
					k := j + 1
					for k < len(runes) && wordChar(runes[k]) {
						k++
					}
					if k-j-1 >= 5 {
						j = k
					}
				}
			}
			if typ != "" {
				l := len(utf16.Encode(runes[i:j]))
				out = append(out, MessageEntity{Type: typ, Offset: pos, Length: l})
				pos += l
				i = j
				continue
			}
		}
		pos += len(utf16.Encode([]rune{r}))
		i++
	}
	return out
}

func toLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}
