package fakediscord

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Gateway opcodes.
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opResume         = 6
	opReconnect      = 7
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatACK   = 11
)

type event struct {
	seq int64
	t   string
	d   json.RawMessage
}

type session struct {
	id       string
	token    string
	intents  int
	compress bool
	seq      int64
	events   []event
	conn     *gwConn
	valid    bool
	shard    [2]int // [shard_id, num_shards]; num_shards 0 = not sharded
}

// onShard reports whether events of guild (""= a DM) go to this session:
// Discord routes a guild to shard (guild_id >> 22) % num_shards and DMs to
// shard 0.
func (sess *session) onShard(guild string) bool {
	if sess.shard[1] <= 1 {
		return true
	}
	if guild == "" {
		return sess.shard[0] == 0
	}
	id, err := strconv.ParseUint(guild, 10, 64)
	if err != nil {
		return sess.shard[0] == 0
	}
	return int((id>>22)%uint64(sess.shard[1])) == sess.shard[0]
}

type outFrame struct {
	data      []byte
	compress  bool // sent zlib-compressed in a binary frame (by the writer, off s.mu)
	close     bool
	closeCode int
	closeText string
}

type gwConn struct {
	s    *Server
	ws   *websocket.Conn
	sess *session // guarded by s.mu

	z payloadCompressor // the writer's

	qmu     sync.Mutex
	qcond   *sync.Cond
	queue   []outFrame
	closed  bool
	closing bool          // a close frame is queued
	wdone   chan struct{} // closed when the writer stops
}

func newConn(s *Server, ws *websocket.Conn) *gwConn {
	c := &gwConn{s: s, ws: ws, wdone: make(chan struct{})}
	c.qcond = sync.NewCond(&c.qmu)
	return c
}

func (c *gwConn) enqueue(f outFrame) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if c.closed {
		return
	}
	c.queue = append(c.queue, f)
	c.qcond.Broadcast()
}

// writer is the connection's only data writer; it stops when the
// connection is killed.
func (c *gwConn) writer() {
	defer close(c.wdone)
	for {
		c.qmu.Lock()
		for len(c.queue) == 0 && !c.closed {
			c.qcond.Wait()
		}
		if c.closed {
			c.qmu.Unlock()
			return
		}
		f := c.queue[0]
		c.queue = c.queue[1:]
		c.qmu.Unlock()

		_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
		var err error
		switch {
		case f.close:
			// The connection is killed either way; a failed close frame changes nothing.
			_ = c.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(f.closeCode, f.closeText))
			c.kill()
			return
		case f.compress:
			err = c.ws.WriteMessage(websocket.BinaryMessage, c.z.compress(f.data))
		default:
			err = c.ws.WriteMessage(websocket.TextMessage, f.data)
		}
		if err != nil {
			c.kill()
			return
		}
	}
}

// kill closes the TCP connection without a close frame.
func (c *gwConn) kill() {
	c.qmu.Lock()
	c.closed = true
	c.qcond.Broadcast()
	c.qmu.Unlock()
	_ = c.ws.Close()
}

func (c *gwConn) sendOp(op int, d any) {
	raw, _ := json.Marshal(d)
	b, _ := json.Marshal(gatewayPayload{Op: op, D: raw})
	c.enqueue(outFrame{data: b})
}

func (c *gwConn) sendEvent(e event, compress bool) {
	c.enqueue(outFrame{data: dispatchFrame(e), compress: compress})
}

func (c *gwConn) closeWith(code int, text string) {
	c.qmu.Lock()
	c.closing = true
	c.qmu.Unlock()
	c.enqueue(outFrame{close: true, closeCode: code, closeText: text})
}

// flush waits (briefly) for a queued close frame to be written.
func (c *gwConn) flush() {
	c.qmu.Lock()
	closing := c.closing
	c.qmu.Unlock()
	if !closing {
		return
	}
	select {
	case <-c.wdone:
	case <-time.After(2 * time.Second):
	}
}

// dispatchLocked appends a dispatch to sess and sends it if connected.
func (s *Server) dispatchLocked(sess *session, t string, d any) {
	raw, err := json.Marshal(d)
	if err != nil {
		panic(fmt.Sprintf("fakediscord: marshal %s: %v", t, err))
	}
	sess.seq++
	e := event{seq: sess.seq, t: t, d: raw}
	sess.events = append(sess.events, e)
	if len(sess.events) > 5000 {
		sess.events = sess.events[len(sess.events)-5000:]
	}
	if sess.conn != nil {
		sess.conn.sendEvent(e, sess.compress)
	}
}

// dispatchMessageLocked sends MESSAGE_CREATE/UPDATE to every valid session
// whose intents cover it (GUILD_MESSAGES / DIRECT_MESSAGES); without the
// MESSAGE_CONTENT intent, guild messages that do not mention the bot arrive
// with empty content and attachments, as on Discord.
func (s *Server) dispatchMessageLocked(t string, m *Message) {
	for _, sess := range s.sessions {
		if !sess.valid || !sess.onShard(m.GuildID) {
			continue
		}
		need := IntentDirectMessages
		if m.GuildID != "" {
			need = IntentGuildMessages
		}
		if sess.intents&need == 0 {
			continue
		}
		out := *m
		if m.GuildID != "" && sess.intents&IntentMessageContent == 0 && m.Author.ID != s.opts.BotID && !mentions(m, s.opts.BotID) {
			out.Content = ""
			out.Attachments = []Attachment{}
			out.Embeds = []json.RawMessage{}
		}
		s.dispatchLocked(sess, t, out)
	}
}

func mentions(m *Message, id string) bool {
	for _, u := range m.Mentions {
		if u.ID == id {
			return true
		}
	}
	return false
}

func (s *Server) tokenOK(tok string) bool {
	return s.opts.Token == "" || strings.TrimPrefix(tok, "Bot ") == s.opts.Token
}

func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := newConn(s, ws)
	ws.SetCloseHandler(func(code int, text string) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.closeCodes = append(s.closeCodes, code)
		// Discord: closing with 1000 or 1001 invalidates the session.
		if (code == websocket.CloseNormalClosure || code == websocket.CloseGoingAway) && c.sess != nil {
			c.sess.valid = false
		}
		s.notifyLocked()
		return nil
	})
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.connections++
	s.notifyLocked()
	interval := s.opts.HeartbeatInterval.Milliseconds()
	s.mu.Unlock()
	go c.writer()

	defer func() {
		s.mu.Lock()
		if c.sess != nil && c.sess.conn == c {
			c.sess.conn = nil
		}
		delete(s.conns, c)
		s.notifyLocked()
		s.mu.Unlock()
		c.flush()
		c.kill()
	}()

	if interval < 1 {
		interval = 1
	}
	c.sendOp(opHello, map[string]any{"heartbeat_interval": interval})
	if q.Get("encoding") != "json" {
		c.closeWith(4002, "Error while decoding payload.")
		return
	}
	if q.Get("v") != "9" && q.Get("v") != "10" {
		c.closeWith(4012, "Invalid API version.")
		return
	}

	for {
		mt, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		if mt != websocket.TextMessage {
			c.closeWith(4002, "Error while decoding payload.")
			return
		}
		var p gatewayPayload
		if err := json.Unmarshal(data, &p); err != nil {
			c.closeWith(4002, "Error while decoding payload.")
			return
		}
		switch p.Op {
		case opHeartbeat:
			s.mu.Lock()
			s.heartbeats++
			ack := s.ack
			s.notifyLocked()
			s.mu.Unlock()
			if ack {
				c.sendOp(opHeartbeatACK, nil)
			}
		case opIdentify:
			if !s.identify(c, p.D) {
				return
			}
		case opResume:
			s.resume(c, p.D)
		default:
			// presence updates, request guild members, ...: accepted, ignored.
		}
	}
}

// identify handles op 2; false means the connection was closed.
func (s *Server) identify(c *gwConn, raw json.RawMessage) bool {
	var id Identify
	if err := json.Unmarshal(raw, &id); err != nil {
		c.closeWith(4002, "Error while decoding payload.")
		return false
	}
	id.Raw = append(json.RawMessage(nil), raw...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.identifies = append(s.identifies, id)
	s.notifyLocked()
	switch {
	case c.sess != nil:
		c.closeWith(4005, "Already authenticated.")
		return false
	case !s.tokenOK(id.Token):
		c.closeWith(4004, "Authentication failed.")
		return false
	case s.refuseMC && id.Intents&IntentMessageContent != 0:
		c.closeWith(4014, "Disallowed intent(s).")
		return false
	}
	var shard [2]int
	if len(id.Shard) == 2 && id.Shard[1] > 1 && id.Shard[0] >= 0 && id.Shard[0] < id.Shard[1] {
		shard = [2]int{id.Shard[0], id.Shard[1]}
	}
	for _, old := range s.sessions {
		if old.shard == shard || shard[1] == 0 || old.shard[1] == 0 {
			old.valid = false // a new session of the same shard replaces the old one
		}
	}
	sess := &session{id: randomHex(16), token: id.Token, intents: id.Intents, compress: id.Compress, conn: c, valid: true, shard: shard}
	s.sessions[sess.id] = sess
	c.sess = sess

	guilds := make([]map[string]any, 0, len(s.guilds))
	for gid := range s.guilds {
		guilds = append(guilds, map[string]any{"id": gid, "unavailable": true})
	}
	s.dispatchLocked(sess, "READY", map[string]any{
		"v":                  9,
		"user":               s.botUser(),
		"guilds":             guilds,
		"session_id":         sess.id,
		"resume_gateway_url": s.GatewayURL(),
		"private_channels":   []any{},
		"application":        map[string]any{"id": s.opts.BotID, "flags": 0},
	})
	if id.Intents&IntentGuilds != 0 {
		for gid, name := range s.guilds {
			chans, threads := []Channel{}, []Channel{}
			for _, rec := range s.channels {
				if rec.GuildID != gid {
					continue
				}
				if rec.Type == ChannelTypePublicThread {
					threads = append(threads, rec.Channel)
				} else {
					chans = append(chans, rec.Channel)
				}
			}
			s.dispatchLocked(sess, "GUILD_CREATE", map[string]any{
				"id": gid, "name": name, "unavailable": false, "channels": chans, "threads": threads,
				"members": []any{}, "roles": []any{}, "emojis": []any{}, "voice_states": []any{},
			})
		}
	}
	return true
}

// resume handles op 6: replays what the client missed and sends RESUMED, or
// answers INVALID_SESSION (d: false).
func (s *Server) resume(c *gwConn, raw json.RawMessage) {
	var rs Resume
	if err := json.Unmarshal(raw, &rs); err != nil {
		c.closeWith(4002, "Error while decoding payload.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[rs.SessionID]
	rs.Accepted = sess != nil && sess.valid && s.tokenOK(rs.Token) && rs.Seq <= sess.seq
	s.resumes = append(s.resumes, rs)
	s.notifyLocked()
	if !rs.Accepted {
		c.sendOp(opInvalidSession, false)
		return
	}
	if sess.conn != nil && sess.conn != c {
		sess.conn.kill()
	}
	sess.conn = c
	c.sess = sess
	for _, e := range sess.events {
		if e.seq > rs.Seq {
			c.sendEvent(e, sess.compress)
		}
	}
	s.dispatchLocked(sess, "RESUMED", map[string]any{})
}

// ---- driving the gateway from tests ----

// DropConnection cuts every gateway TCP connection without a close frame.
// Sessions stay resumable; dispatches produced meanwhile are buffered and
// replayed on RESUME.
func (s *Server) DropConnection() {
	s.mu.Lock()
	conns := s.detachAllLocked()
	s.mu.Unlock()
	for _, c := range conns {
		c.kill()
	}
}

func (s *Server) detachAllLocked() []*gwConn {
	var conns []*gwConn
	for c := range s.conns {
		conns = append(conns, c)
		if c.sess != nil && c.sess.conn == c {
			c.sess.conn = nil
		}
	}
	s.notifyLocked()
	return conns
}

// CloseGateway sends a close frame with code and reason on every gateway
// connection, then closes it. Sessions stay valid unless ExpireSession is
// called (Discord invalidates sessions for codes such as 4007 and 4009).
func (s *Server) CloseGateway(code int, reason string) {
	s.mu.Lock()
	conns := s.detachAllLocked()
	s.mu.Unlock()
	for _, c := range conns {
		c.closeWith(code, reason)
	}
}

// SendReconnect sends op 7 RECONNECT on every gateway connection.
func (s *Server) SendReconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.sendOp(opReconnect, nil)
	}
}

// InvalidateSession sends op 9 INVALID_SESSION with d = resumable; when not
// resumable the sessions are invalidated.
func (s *Server) InvalidateSession(resumable bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if !resumable && c.sess != nil {
			c.sess.valid = false
			c.sess = nil
		}
		c.sendOp(opInvalidSession, resumable)
	}
	s.notifyLocked()
}

// ExpireSession invalidates every session silently: the next RESUME is
// answered with INVALID_SESSION and dispatches stop until a new IDENTIFY.
func (s *Server) ExpireSession() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sess := range s.sessions {
		sess.valid = false
	}
	s.notifyLocked()
}

// SetHeartbeatACK switches op 11 answers to heartbeats on or off.
func (s *Server) SetHeartbeatACK(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ack = on
}

// RefuseMessageContent makes IDENTIFY with the MESSAGE_CONTENT intent fail
// with close code 4014 (privileged intent not enabled in the portal).
func (s *Server) RefuseMessageContent(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseMC = on
}

// Identifies returns every IDENTIFY payload received.
func (s *Server) Identifies() []Identify {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Identify(nil), s.identifies...)
}

// Resumes returns every RESUME payload received.
func (s *Server) Resumes() []Resume {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Resume(nil), s.resumes...)
}

// Heartbeats returns how many op 1 heartbeats were received.
func (s *Server) Heartbeats() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heartbeats
}

// Connections returns how many gateway WebSocket connections were accepted.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connections
}

// ClientCloseCodes returns the close codes the client sent, in order.
func (s *Server) ClientCloseCodes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.closeCodes...)
}

// Online reports whether a valid session is attached to a live connection.
func (s *Server) Online() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sess := range s.sessions {
		if sess.valid && sess.conn != nil {
			return true
		}
	}
	return false
}

// WaitIdentifies waits for at least n IDENTIFY payloads.
func (s *Server) WaitIdentifies(t testing.TB, n int, timeout time.Duration) []Identify {
	t.Helper()
	var got []Identify
	s.WaitFor(t, timeout, fmt.Sprintf("%d IDENTIFY", n), func() bool {
		got = s.Identifies()
		return len(got) >= n
	})
	return got
}

// WaitResumes waits for at least n RESUME payloads.
func (s *Server) WaitResumes(t testing.TB, n int, timeout time.Duration) []Resume {
	t.Helper()
	var got []Resume
	s.WaitFor(t, timeout, fmt.Sprintf("%d RESUME", n), func() bool {
		got = s.Resumes()
		return len(got) >= n
	})
	return got
}

// WaitOnline waits until a valid session is attached to a live connection.
func (s *Server) WaitOnline(t testing.TB, timeout time.Duration) {
	t.Helper()
	s.WaitFor(t, timeout, "an online gateway session", s.Online)
}
