package fakeslack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	valid := s.tickets[ticket]
	delete(s.tickets, ticket) // single use, like Slack's
	s.mu.Unlock()
	if !valid {
		http.Error(w, "invalid ticket", http.StatusUnauthorized)
		return
	}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	s.mu.Lock()
	select {
	case <-s.stop:
		s.mu.Unlock()
		_ = conn.Close()
		return
	default:
	}
	s.connSeq++
	c := &wsConn{n: s.connSeq, conn: conn, done: make(chan struct{})}
	s.conns[c.n] = c
	s.live++
	s.maxLive = max(s.maxLive, s.live)
	hold := s.holdHello
	s.wg.Add(2)
	s.notifyLocked()
	s.mu.Unlock()

	go func() {
		defer s.wg.Done()
		s.pingLoop(c)
	}()
	if !hold {
		s.sendHello(c)
	}
	defer s.wg.Done()
	s.readLoop(c)
}

func (s *Server) pingLoop(c *wsConn) {
	t := time.NewTicker(s.opts.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-s.stop:
			return
		case <-t.C:
			s.mu.Lock()
			silent := s.noPings
			s.mu.Unlock()
			if silent {
				continue
			}
			if err := c.conn.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(time.Second)); err != nil {
				return
			}
		}
	}
}

func (s *Server) readLoop(c *wsConn) {
	defer func() {
		close(c.done)
		_ = c.conn.Close()
		s.mu.Lock()
		delete(s.conns, c.n)
		s.live--
		s.notifyLocked()
		s.mu.Unlock()
	}()
	for {
		_, data, err := c.conn.ReadMessage()
		if err != nil {
			return
		}
		var ack struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(data, &ack) != nil || ack.EnvelopeID == "" {
			continue
		}
		s.mu.Lock()
		s.acks = append(s.acks, Ack{EnvelopeID: ack.EnvelopeID, Conn: c.n, Payload: ack.Payload, At: time.Now()})
		s.notifyLocked()
		s.mu.Unlock()
	}
}

func (s *Server) write(c *wsConn, v any) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
	return c.conn.WriteJSON(v)
}

// sendHello sends the hello frame socketmode expects, then flushes queued envelopes.
func (s *Server) sendHello(c *wsConn) {
	s.mu.Lock()
	n := s.live
	s.mu.Unlock()
	hello := map[string]any{
		"type":            "hello",
		"num_connections": n,
		"debug_info":      map[string]any{"host": "fakeslack-applink", "build_number": 1, "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": s.opts.AppID},
	}
	if s.write(c, hello) != nil {
		return
	}
	s.mu.Lock()
	c.hello = true
	pending := s.pending
	s.pending = nil
	s.notifyLocked()
	s.mu.Unlock()
	for _, e := range pending {
		s.deliver(e)
	}
	if s.opts.RetryUnacked {
		s.retryUnacked(c)
	}
}

// retryUnacked sends again, once, the envelopes sent on connections before c
// that were never acked.
func (s *Server) retryUnacked(c *wsConn) {
	var retry []string
	s.mu.Lock()
	for _, id := range s.envelopeSent {
		if e := s.envelopes[id]; e != nil && !e.retried && e.sentConn != c.n && !s.ackedLocked(id) {
			e.retried = true
			retry = append(retry, id)
		}
	}
	s.mu.Unlock()
	for _, id := range retry {
		s.Redeliver(id)
	}
}

func (s *Server) liveConnsLocked() []*wsConn {
	var out []*wsConn
	for i := 1; i <= s.connSeq; i++ {
		if c, ok := s.conns[i]; ok {
			out = append(out, c)
		}
	}
	return out
}

// current returns the newest open connection that got its hello.
func (s *Server) currentLocked() *wsConn {
	for i := s.connSeq; i >= 1; i-- {
		if c, ok := s.conns[i]; ok && c.hello {
			return c
		}
	}
	return nil
}

// deliver writes the envelope to the current connection or queues it.
func (s *Server) deliver(e *envelope) {
	s.mu.Lock()
	c := s.currentLocked()
	if c == nil {
		s.pending = append(s.pending, e)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	frame := envelopeFrame{EnvelopeID: e.id, Type: "events_api", RetryAttempt: e.attempt, Payload: e.event}
	if e.attempt > 0 {
		frame.RetryReason = "timeout"
	}
	if err := s.write(c, frame); err != nil {
		// A connection that cannot be written to is gone (its client died):
		// like Slack, deliver on another open connection, or queue the
		// envelope for the next one to say hello.
		s.mu.Lock()
		if s.conns[c.n] == c {
			delete(s.conns, c.n)
		}
		s.mu.Unlock()
		s.deliver(e)
		return
	}
	s.mu.Lock()
	e.sentConn = c.n
	s.envelopeSent = append(s.envelopeSent, e.id)
	s.notifyLocked()
	s.mu.Unlock()
}

// The frames the fake writes for every event are structs rather than maps
// (a map is sorted and reflected key by key on every marshal); their fields
// are in the order json.Marshal writes a map's keys, so the bytes on the
// wire are those the maps made.

// envelopeFrame is a Socket Mode events_api envelope.
type envelopeFrame struct {
	AcceptsResponsePayload bool            `json:"accepts_response_payload"`
	EnvelopeID             string          `json:"envelope_id"`
	Payload                json.RawMessage `json:"payload"`
	RetryAttempt           int             `json:"retry_attempt"`
	RetryReason            string          `json:"retry_reason"`
	Type                   string          `json:"type"`
}

// eventCallback is the Events API event_callback payload.
type eventCallback struct {
	APIAppID       string          `json:"api_app_id"`
	Authorizations []authorization `json:"authorizations"`
	Event          any             `json:"event"`
	EventContext   string          `json:"event_context"`
	EventID        string          `json:"event_id"`
	EventTime      int64           `json:"event_time"`
	TeamID         string          `json:"team_id"`
	Token          string          `json:"token"`
	Type           string          `json:"type"`
}

type authorization struct {
	IsBot  bool   `json:"is_bot"`
	TeamID string `json:"team_id"`
	UserID string `json:"user_id"`
}

// EventCallback wraps an inner event in the Events API event_callback payload
// (the body of an HTTP request, the payload of a Socket Mode envelope) and
// returns it with its event_id.
func (s *Server) EventCallback(event any) (body []byte, eventID string) {
	s.mu.Lock()
	s.seq++
	eventID = fmt.Sprintf("Ev%08d", s.seq)
	s.mu.Unlock()
	payload := eventCallback{
		Token:          "fake-verification-token",
		TeamID:         s.opts.TeamID,
		APIAppID:       s.opts.AppID,
		Event:          event,
		Type:           "event_callback",
		EventID:        eventID,
		EventTime:      1700000000,
		EventContext:   "4-fake",
		Authorizations: []authorization{{TeamID: s.opts.TeamID, UserID: s.opts.BotUserID, IsBot: true}},
	}
	b, err := json.Marshal(payload)
	if err != nil {
		panic(fmt.Sprintf("fakeslack: event does not marshal: %v", err))
	}
	return b, eventID
}

// SendEvent sends an events_api envelope carrying the inner event over Socket
// Mode (queued until a connection has its hello) and returns the envelope id.
func (s *Server) SendEvent(event any) string {
	body, _ := s.EventCallback(event)
	return s.SendPayload(body)
}

// SendPayload sends an events_api envelope with a ready-made payload.
func (s *Server) SendPayload(payload []byte) string {
	s.mu.Lock()
	s.seq++
	e := &envelope{id: fmt.Sprintf("env-%06d", s.seq), event: json.RawMessage(payload)}
	s.envelopes[e.id] = e
	s.mu.Unlock()
	s.deliver(e)
	return e.id
}

// Redeliver plays Slack's retry of an envelope: the same payload (same
// event_id and event) in a new envelope with retry_attempt one higher and
// retry_reason "timeout". It returns the new envelope id.
func (s *Server) Redeliver(envelopeID string) string {
	s.mu.Lock()
	old, ok := s.envelopes[envelopeID]
	if !ok {
		s.mu.Unlock()
		panic("fakeslack: unknown envelope " + envelopeID)
	}
	s.seq++
	e := &envelope{id: fmt.Sprintf("env-%06d", s.seq), event: old.event, attempt: old.attempt + 1}
	s.envelopes[e.id] = e
	s.mu.Unlock()
	s.deliver(e)
	return e.id
}

// Disconnect sends {"type":"disconnect","reason":reason} on every open
// connection, as Slack does before rotating a connection ("refresh_requested",
// "warning", "link_disabled").
func (s *Server) Disconnect(reason string) {
	s.mu.Lock()
	conns := s.liveConnsLocked()
	s.mu.Unlock()
	for _, c := range conns {
		_ = s.write(c, map[string]any{"type": "disconnect", "reason": reason, "debug_info": map[string]any{"host": "fakeslack-applink"}})
	}
}

// DropConnections closes every open connection abruptly (no close frame).
func (s *Server) DropConnections() {
	s.mu.Lock()
	conns := s.liveConnsLocked()
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.conn.UnderlyingConn().Close()
	}
}

// ---- story helpers ----

// Message describes a user's (or bot's) message; Event and AppMention render
// it as the inner events Slack sends.
type Message struct {
	Channel     string
	ChannelType string // "im", "channel", "group", "mpim"; derived from Channel if empty
	User        string
	Text        string
	TS          string
	ThreadTS    string
	BotID       string
	SubType     string
	Files       []map[string]any // from AddFile
}

// Event renders the `message` event.
func (m Message) Event() map[string]any {
	ev := map[string]any{
		"type": "message", "channel": m.Channel, "text": m.Text, "ts": m.TS, "event_ts": m.TS,
		"channel_type": m.ChannelType,
	}
	if m.ChannelType == "" {
		ev["channel_type"] = channelType(m.Channel)
	}
	if m.User != "" {
		ev["user"] = m.User
	}
	if m.BotID == "" && m.User != "" {
		ev["client_msg_id"] = "cm-" + strings.ReplaceAll(m.TS, ".", "-")
	}
	if m.ThreadTS != "" {
		ev["thread_ts"] = m.ThreadTS
	}
	if m.BotID != "" {
		ev["bot_id"] = m.BotID
	}
	if m.SubType != "" {
		ev["subtype"] = m.SubType
	}
	if len(m.Files) > 0 {
		ev["files"] = m.Files
		if m.SubType == "" {
			ev["subtype"] = "file_share"
		}
		ev["upload"] = false
	}
	return ev
}

// AppMention renders the `app_mention` event Slack sends for the same message.
func (m Message) AppMention() map[string]any {
	ev := map[string]any{
		"type": "app_mention", "channel": m.Channel, "user": m.User, "text": m.Text, "ts": m.TS, "event_ts": m.TS,
	}
	if m.ThreadTS != "" {
		ev["thread_ts"] = m.ThreadTS
	}
	if len(m.Files) > 0 {
		ev["files"] = m.Files
	}
	return ev
}

// DMChannel is the fake's DM channel id between the bot and user.
func DMChannel(user string) string { return "D" + user }

// Mention is the bot's mention markup in message text ("<@UBOT0001>").
func (s *Server) Mention() string { return "<@" + s.opts.BotUserID + ">" }

// UserDMs sends a direct message from user to the bot and returns the message
// with its ts and envelope id.
func (s *Server) UserDMs(user, text string) (Message, string) {
	m := Message{Channel: DMChannel(user), ChannelType: "im", User: user, Text: text, TS: s.NextTS()}
	return m, s.SendEvent(m.Event())
}

// UserSays sends a top-level channel message that does not mention the bot.
func (s *Server) UserSays(channel, user, text string) (Message, string) {
	m := Message{Channel: channel, User: user, Text: text, TS: s.NextTS()}
	return m, s.SendEvent(m.Event())
}

// UserMentions sends a channel message mentioning the bot the way Slack does:
// a `message` event and then an `app_mention` event for the same channel + ts.
// The mention is prepended when text does not contain it. It returns the
// message and both envelope ids (message first).
func (s *Server) UserMentions(channel, user, text string) (Message, []string) {
	if !strings.Contains(text, s.Mention()) {
		text = s.Mention() + " " + text
	}
	m := Message{Channel: channel, User: user, Text: text, TS: s.NextTS()}
	return m, []string{s.SendEvent(m.Event()), s.SendEvent(m.AppMention())}
}

// UserRepliesInThread sends a reply in the thread rooted at threadTS (no mention).
func (s *Server) UserRepliesInThread(channel, threadTS, user, text string) (Message, string) {
	m := Message{Channel: channel, User: user, Text: text, TS: s.NextTS(), ThreadTS: threadTS}
	return m, s.SendEvent(m.Event())
}

// AssistantThreadStarted sends assistant_thread_started for a DM thread and
// returns its thread ts.
func (s *Server) AssistantThreadStarted(user string) (channel, threadTS string, envelopeID string) {
	channel, threadTS = DMChannel(user), s.NextTS()
	ev := map[string]any{
		"type": "assistant_thread_started",
		"assistant_thread": map[string]any{
			"user_id": user, "channel_id": channel, "thread_ts": threadTS,
			"context": map[string]any{},
		},
		"event_ts": threadTS,
	}
	return channel, threadTS, s.SendEvent(ev)
}
