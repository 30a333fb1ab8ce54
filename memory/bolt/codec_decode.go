package bolt

// Hand-written JSON decoders for the records the hot path reads on every
// message: session metadata (read three times a turn), stored history
// messages, inbox items and outbox records. They are the counterparts of
// codec.go's encoders and accept exactly the canonical shape those write (and json.Marshal writes): members in struct order, no
// whitespace, omitempty members present or absent, integers as
// strconv.AppendInt/AppendUint write them. Anything else (another member
// order, an unknown or duplicate member, whitespace, null, an empty array, a
// number with a fraction or leading zero, a time string with an escape)
// makes a decoder report false, and the caller falls back to json.Unmarshal;
// returning false is always allowed, so a rare shape costs speed, never
// correctness.
//
// Soundness is the contract: whenever decodeX(data, v) reports true,
// json.Unmarshal(data, &ref) into a zero value succeeds and ref is
// reflect.DeepEqual to *v. Strings are unescaped exactly as encoding/json
// unescapes them (invalid UTF-8 and lone surrogates become U+FFFD) and times
// are parsed by the very method json.Unmarshal calls (Time.UnmarshalJSON on
// the raw literal). codec_decode_test.go fuzzes that claim on arbitrary
// bytes.
//
// Each decoder first zeroes *v and zeroes it again when it reports false, so a
// reused value holds nothing stale and the fallback decodes into a zero
// value. Allocations: one per non-empty string returned (none for a few
// well-known values such as roles and states, which are interned), one per
// slice, none for UTC times.

import (
	"encoding/base64"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/internal/jsonlite"
	"github.com/switchboard-bot/switchboard/memory"
)

// decodeSessionMeta decodes the canonical JSON of a session's metadata into
// *m. It reports false (and leaves *m zero) for any other input.
func decodeSessionMeta(data []byte, m *memory.SessionMeta) bool {
	*m = memory.SessionMeta{}
	r := recordReader{b: data}
	r.lit(`{"key":`)
	m.Key = r.str()
	r.lit(`,"created":`)
	r.time(&m.Created)
	r.lit(`,"updated":`)
	r.time(&m.Updated)
	r.lit(`,"last_user_message":`)
	r.time(&m.LastUserMessage)
	r.lit(`,"turns":`)
	m.Turns = r.int()
	r.lit(`,"messages":`)
	m.Messages = r.int()
	r.lit(`,"usage":`)
	m.Usage = r.usage()
	if r.opt(`,"persona":`) {
		m.Persona = r.str()
	}
	if r.opt(`,"archived":[`) {
		var buf [8]string
		list := append(buf[:0], r.str())
		for r.opt(",") {
			list = append(list, r.str())
		}
		m.Archived = endList(&r, list)
	}
	if r.opt(`,"last_turn_id":`) {
		m.LastTurnID = r.str()
	}
	r.lit(`}`)
	if !r.done() {
		*m = memory.SessionMeta{}
		return false
	}
	return true
}

// decodeStoredMessage decodes the canonical JSON of a stored history message
// into *m. It reports false (and leaves *m zero) for any other input.
func decodeStoredMessage(data []byte, m *storedMessage) bool {
	*m = storedMessage{}
	r := recordReader{b: data}
	r.lit(`{"turn":`)
	m.Turn = r.uint()
	r.lit(`,"m":`)
	r.message(&m.M)
	r.lit(`}`)
	if !r.done() {
		*m = storedMessage{}
		return false
	}
	return true
}

// decodeInboxItem decodes the canonical JSON of an inbox item into *it. It
// reports false (and leaves *it zero) for any other input.
func decodeInboxItem(data []byte, it *memory.InboxItem) bool {
	*it = memory.InboxItem{}
	r := recordReader{b: data}
	r.lit(`{"id":`)
	it.ID = r.uint()
	r.lit(`,"channel":`)
	it.Channel = r.str()
	r.lit(`,"message_id":`)
	it.MessageID = r.str()
	r.lit(`,"session_key":`)
	it.SessionKey = r.str()
	if r.opt(`,"payload":`) {
		it.Payload = r.base64()
	}
	r.lit(`,"received":`)
	r.time(&it.Received)
	r.lit(`,"state":`)
	it.State = r.str()
	if r.opt(`,"turn_id":`) {
		it.TurnID = r.str()
	}
	if r.opt(`,"answer":`) {
		it.Answer = r.str()
	}
	r.lit(`}`)
	if !r.done() {
		*it = memory.InboxItem{}
		return false
	}
	return true
}

// decodeOutboxRecord decodes the canonical JSON of an outbox record into *o.
// It reports false (and leaves *o zero) for any other input.
func decodeOutboxRecord(data []byte, o *memory.OutboxRecord) bool {
	*o = memory.OutboxRecord{}
	r := recordReader{b: data}
	r.lit(`{"id":`)
	o.ID = r.uint()
	r.lit(`,"target":`)
	o.Target = r.str()
	r.lit(`,"turn_id":`)
	o.TurnID = r.str()
	r.lit(`,"chunk":`)
	o.Chunk = r.int()
	r.lit(`,"text":`)
	o.Text = r.str()
	r.lit(`,"status":`)
	o.Status = r.str()
	if r.opt(`,"platform_id":`) {
		o.PlatformID = r.str()
	}
	if r.opt(`,"error":`) {
		o.Error = r.str()
	}
	r.lit(`,"created":`)
	r.time(&o.Created)
	r.lit(`,"updated":`)
	r.time(&o.Updated)
	r.lit(`}`)
	if !r.done() {
		*o = memory.OutboxRecord{}
		return false
	}
	return true
}

// recordReader reads canonical JSON tokens from b at pos. The first token
// that does not match sets bad; after that every method is a no-op returning
// a zero value, so decoders read straight through and check done once.
type recordReader struct {
	b   []byte
	pos int
	bad bool
}

// done reports whether every byte was read and every token matched.
func (r *recordReader) done() bool { return !r.bad && r.pos == len(r.b) }

// lit consumes exactly s.
func (r *recordReader) lit(s string) {
	if !r.opt(s) {
		r.bad = true
	}
}

// opt consumes s if the input continues with it (an omitempty member's key).
func (r *recordReader) opt(s string) bool {
	if r.bad || len(r.b)-r.pos < len(s) || string(r.b[r.pos:r.pos+len(s)]) != s {
		return false
	}
	r.pos += len(s)
	return true
}

// str reads a JSON string and returns it unescaped as encoding/json would.
// A string without escapes and with valid UTF-8 is copied in one allocation
// (none for an empty or interned one); any other is jsonlite.Unquote's.
func (r *recordReader) str() string {
	if r.bad || r.pos >= len(r.b) || r.b[r.pos] != '"' {
		r.bad = true
		return ""
	}
	n, plain, ok := jsonlite.ScanString(r.b[r.pos:])
	if !ok {
		r.bad = true
		return ""
	}
	if plain {
		s := internString(r.b[r.pos+1 : r.pos+n-1])
		r.pos += n
		return s
	}
	s, _, _ := jsonlite.Unquote(r.b[r.pos:])
	r.pos += n
	return s
}

// internString returns string(b), without allocating for the values most
// records repeat (roles, states, channel names).
func internString(b []byte) string {
	switch string(b) {
	case "":
		return ""
	case memory.RoleUser:
		return memory.RoleUser
	case memory.RoleAssistant:
		return memory.RoleAssistant
	case memory.RoleTool:
		return memory.RoleTool
	case memory.RoleSystem:
		return memory.RoleSystem
	case memory.InboxPending:
		return memory.InboxPending
	case memory.InboxAnswered:
		return memory.InboxAnswered
	case memory.OutboxDelivered:
		return memory.OutboxDelivered
	case memory.OutboxFailed:
		return memory.OutboxFailed
	case "telegram":
		return "telegram"
	case "discord":
		return "discord"
	case "slack":
		return "slack"
	case "console":
		return "console"
	case "web":
		return "web"
	}
	return string(b)
}

// digits reads a canonical unsigned integer: "0", or a digit 1-9 followed by
// digits, at most math.MaxUint64.
func (r *recordReader) digits() uint64 {
	if r.bad {
		return 0
	}
	var v uint64
	i := r.pos
	for ; i < len(r.b) && r.b[i] >= '0' && r.b[i] <= '9'; i++ {
		d := uint64(r.b[i] - '0')
		if v > (math.MaxUint64-d)/10 {
			r.bad = true
			return 0
		}
		v = v*10 + d
	}
	if n := i - r.pos; n == 0 || (n > 1 && r.b[r.pos] == '0') {
		r.bad = true
		return 0
	}
	r.pos = i
	return v
}

// uint reads an integer as strconv.AppendUint writes it.
func (r *recordReader) uint() uint64 { return r.digits() }

// int reads an integer as strconv.AppendInt writes it (no "-0") that fits in
// an int.
func (r *recordReader) int() int {
	neg := r.opt("-")
	mag := r.digits()
	var v int64
	switch {
	case r.bad:
		return 0
	case neg && (mag == 0 || mag > 1<<63):
		r.bad = true
		return 0
	case neg:
		v = -int64(mag) // mag == 1<<63 wraps to math.MinInt64, as wanted
	case mag > math.MaxInt64:
		r.bad = true
		return 0
	default:
		v = int64(mag)
	}
	if strconv.IntSize == 32 && int64(int(v)) != v {
		r.bad = true
		return 0
	}
	return int(v)
}

// time reads a JSON string holding a time into *t, parsed by the method
// json.Unmarshal itself calls on the raw literal (Time.UnmarshalJSON). The
// string must be printable ASCII without escapes; null is not accepted.
func (r *recordReader) time(t *time.Time) {
	if r.bad || r.pos >= len(r.b) || r.b[r.pos] != '"' {
		r.bad = true
		return
	}
	for i := r.pos + 1; i < len(r.b); i++ {
		switch c := r.b[i]; {
		case c == '"':
			if err := t.UnmarshalJSON(r.b[r.pos : i+1]); err != nil {
				r.bad = true
				return
			}
			r.pos = i + 1
			return
		case c < ' ' || c == '\\' || c >= utf8.RuneSelf:
			r.bad = true
			return
		}
	}
	r.bad = true
}

// base64 reads a JSON string of standard padded base64 (no escapes, no line
// breaks) and decodes it as json.Unmarshal decodes a []byte.
func (r *recordReader) base64() []byte {
	r.lit(`"`)
	if r.bad {
		return nil
	}
	start := r.pos
	end := start
	for end < len(r.b) && isBase64Char(r.b[end]) {
		end++
	}
	if end >= len(r.b) || r.b[end] != '"' {
		r.bad = true
		return nil
	}
	src := r.b[start:end]
	out := make([]byte, base64.StdEncoding.DecodedLen(len(src)))
	n, err := base64.StdEncoding.Decode(out, src)
	if err != nil {
		r.bad = true
		return nil
	}
	r.pos = end + 1
	return out[:n]
}

func isBase64Char(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}

// usage reads a memory.Usage object.
func (r *recordReader) usage() memory.Usage {
	var u memory.Usage
	r.lit(`{"prompt_tokens":`)
	u.PromptTokens = r.int()
	r.lit(`,"completion_tokens":`)
	u.CompletionTokens = r.int()
	r.lit(`,"total_tokens":`)
	u.TotalTokens = r.int()
	r.lit(`}`)
	return u
}

// endList reads the closing bracket of an array whose elements were read
// into list and returns a copy of exactly their number, or nil if anything
// did not match. Callers read into a stack buffer: one allocation in all.
func endList[T any](r *recordReader, list []T) []T {
	r.lit("]")
	if r.bad {
		return nil
	}
	return append([]T(nil), list...)
}

// message reads a memory.Message object.
func (r *recordReader) message(m *memory.Message) {
	r.lit(`{"role":`)
	m.Role = r.str()
	if r.opt(`,"content":`) {
		m.Content = r.str()
	}
	if r.opt(`,"reasoning":`) {
		m.Reasoning = r.str()
	}
	if r.opt(`,"media":[`) {
		var buf [4]memory.MediaRef
		list := append(buf[:0], r.mediaRef())
		for r.opt(",") {
			list = append(list, r.mediaRef())
		}
		m.Media = endList(r, list)
	}
	if r.opt(`,"tool_calls":[`) {
		var buf [4]memory.ToolCall
		list := append(buf[:0], r.toolCall())
		for r.opt(",") {
			list = append(list, r.toolCall())
		}
		m.ToolCalls = endList(r, list)
	}
	if r.opt(`,"tool_call_id":`) {
		m.ToolCallID = r.str()
	}
	if r.opt(`,"name":`) {
		m.Name = r.str()
	}
	r.lit(`,"time":`)
	r.time(&m.Time)
	r.lit(`}`)
}

// mediaRef reads a memory.MediaRef object.
func (r *recordReader) mediaRef() memory.MediaRef {
	var md memory.MediaRef
	r.lit(`{"mime":`)
	md.MIME = r.str()
	if r.opt(`,"name":`) {
		md.Name = r.str()
	}
	if r.opt(`,"size":`) {
		md.Size = r.int()
	}
	r.lit(`}`)
	return md
}

// toolCall reads a memory.ToolCall object.
func (r *recordReader) toolCall() memory.ToolCall {
	var tc memory.ToolCall
	r.lit(`{"id":`)
	tc.ID = r.str()
	r.lit(`,"name":`)
	tc.Name = r.str()
	r.lit(`,"arguments":`)
	tc.Arguments = r.str()
	r.lit(`}`)
	return tc
}
