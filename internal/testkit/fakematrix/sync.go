package fakematrix

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// entry is one item of the server's event stream.
type entry struct {
	kind    string // "timeline", "invite", "account"
	room    string
	event   json.RawMessage // timeline: the client event (without room_id)
	inviter string          // invite
	direct  bool            // invite: is_direct
	// invite: stripped state the inviting server sent along, placed after
	// the invite event (the spec fixes no order; a remote server chooses
	// these events freely, they carry no signature)
	stripped []json.RawMessage
	acct     string // account: the type
}

// event is a client event as /sync returns it.
type event struct {
	Type     string          `json:"type"`
	EventID  string          `json:"event_id"`
	Sender   string          `json:"sender"`
	TS       int64           `json:"origin_server_ts"`
	StateKey *string         `json:"state_key,omitempty"`
	Content  json.RawMessage `json:"content"`
}

// appendLocked adds a timeline event of sender to roomID and returns its id.
func (s *Server) appendLocked(roomID, sender, typ string, content json.RawMessage, stateKey *string) string {
	id := s.nextEventIDLocked()
	raw, err := json.Marshal(event{Type: typ, EventID: id, Sender: sender, TS: time.Now().UnixMilli(), StateKey: stateKey, Content: content})
	if err != nil {
		panic(err)
	}
	s.stream = append(s.stream, entry{kind: "timeline", room: roomID, event: raw})
	s.notifyLocked()
	return id
}

func (s *Server) setAccountDataLocked(typ string, content json.RawMessage) {
	s.acct[typ] = content
	s.stream = append(s.stream, entry{kind: "account", acct: typ})
	s.notifyLocked()
}

func token(n int) string { return "s" + strconv.Itoa(n) }

func parseToken(t string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(t, "s"))
	return n, err == nil && strings.HasPrefix(t, "s") && n >= 0
}

type syncRoom struct {
	Timeline struct {
		Events    []json.RawMessage `json:"events"`
		Limited   bool              `json:"limited,omitempty"`
		PrevBatch string            `json:"prev_batch,omitempty"`
	} `json:"timeline"`
}

type inviteRoom struct {
	InviteState struct {
		Events []json.RawMessage `json:"events"`
	} `json:"invite_state"`
}

type eventsList struct {
	Events []json.RawMessage `json:"events"`
}

type syncResp struct {
	NextBatch   string     `json:"next_batch"`
	AccountData eventsList `json:"account_data"`
	Rooms       struct {
		Join   map[string]*syncRoom   `json:"join,omitempty"`
		Invite map[string]*inviteRoom `json:"invite,omitempty"`
	} `json:"rooms"`
}

// sync answers GET /sync: everything after since (the initial sync when
// since is empty), waiting up to timeout ms for something new.
func (s *Server) sync(w http.ResponseWriter, r *http.Request, _ []byte) {
	since := 0
	initial := r.URL.Query().Get("since") == ""
	if !initial {
		n, ok := parseToken(r.URL.Query().Get("since"))
		if !ok {
			writeErr(w, 400, "M_INVALID_PARAM", "Invalid since token")
			return
		}
		since = n
	}
	timeout, _ := strconv.Atoi(r.URL.Query().Get("timeout"))
	deadline := time.NewTimer(time.Duration(timeout) * time.Millisecond)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if initial || len(s.stream) > since || timeout <= 0 {
			resp := s.buildSyncLocked(since, initial)
			s.mu.Unlock()
			writeJSON(w, 200, resp)
			return
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			timeout = 0
		case <-r.Context().Done():
			return
		}
	}
}

func (s *Server) buildSyncLocked(since int, initial bool) syncResp {
	var resp syncResp
	resp.NextBatch = token(len(s.stream))
	resp.AccountData.Events = []json.RawMessage{}
	resp.Rooms.Join = map[string]*syncRoom{}
	resp.Rooms.Invite = map[string]*inviteRoom{}
	seenAcct := map[string]bool{}
	type pos struct {
		idx int
		raw json.RawMessage
	}
	timelines := map[string][]pos{}
	for i := since; i < len(s.stream); i++ {
		e := s.stream[i]
		switch e.kind {
		case "timeline":
			if rm := s.rooms[e.room]; rm != nil && rm.joined {
				timelines[e.room] = append(timelines[e.room], pos{i, e.event})
			}
		case "invite":
			rm := s.rooms[e.room]
			if rm == nil || rm.joined || rm.left {
				continue
			}
			ir := &inviteRoom{}
			bot := s.opts.UserID
			content, _ := json.Marshal(map[string]any{"membership": "invite", "is_direct": e.direct, "displayname": s.opts.DisplayName})
			ir.InviteState.Events = []json.RawMessage{mustJSON(event{Type: "m.room.member", Sender: e.inviter, StateKey: &bot, Content: content, EventID: "", TS: time.Now().UnixMilli()})}
			ir.InviteState.Events = append(ir.InviteState.Events, e.stripped...)
			resp.Rooms.Invite[e.room] = ir
		case "account":
			seenAcct[e.acct] = true
		}
	}
	if initial {
		for typ := range s.acct {
			seenAcct[typ] = true
		}
	}
	for typ := range seenAcct {
		raw, _ := json.Marshal(map[string]any{"type": typ, "content": s.acct[typ]})
		resp.AccountData.Events = append(resp.AccountData.Events, raw)
	}
	for roomID, evs := range timelines {
		sr := &syncRoom{}
		if len(evs) > s.opts.TimelineLimit {
			evs = evs[len(evs)-s.opts.TimelineLimit:]
			sr.Timeline.Limited = true
			sr.Timeline.PrevBatch = token(evs[0].idx)
		}
		for _, p := range evs {
			sr.Timeline.Events = append(sr.Timeline.Events, p.raw)
		}
		resp.Rooms.Join[roomID] = sr
	}
	return resp
}

// messages answers GET /rooms/{roomId}/messages?dir=f&from=&to=&limit=.
func (s *Server) messages(w http.ResponseWriter, r *http.Request, _ []byte) {
	q := r.URL.Query()
	if q.Get("dir") != "f" {
		writeErr(w, 400, "M_INVALID_PARAM", "fakematrix only pages forwards")
		return
	}
	from, ok := parseToken(q.Get("from"))
	if !ok {
		writeErr(w, 400, "M_INVALID_PARAM", "Invalid from token")
		return
	}
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 {
		limit = 10
	}
	roomID := r.PathValue("room")
	s.mu.Lock()
	defer s.mu.Unlock()
	to := len(s.stream)
	if t := q.Get("to"); t != "" {
		if n, ok := parseToken(t); ok && n < to {
			to = n
		}
	}
	chunk := []json.RawMessage{}
	end := from
	for i := from; i < to && len(chunk) < limit; i++ {
		end = i + 1
		if e := s.stream[i]; e.kind == "timeline" && e.room == roomID {
			chunk = append(chunk, e.event)
		}
	}
	resp := map[string]any{"chunk": chunk, "start": token(from)}
	if end < to {
		resp["end"] = token(end)
	}
	writeJSON(w, 200, resp)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
