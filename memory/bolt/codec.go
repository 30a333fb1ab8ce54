package bolt

// Hand-written JSON encoders for the records the hot path writes on every
// message: inbox items, outbox records, audit records, session metadata, and
// the stored messages and turn headers of a committed turn. Each appendX
// appends to dst exactly the bytes json.Marshal writes for the same value
// (field order, omitempty, HTML-safe string escaping, base64 for []byte,
// time.Time as Time.MarshalJSON writes it), so files written before and after
// read the same and getJSON (json.Unmarshal) decodes them unchanged. With room
// in dst they allocate nothing.
//
// None of these records has a json.RawMessage or a Marshaler field, so there
// is no per-field fallback. The one thing json.Marshal rejects is a time.Time
// that RFC 3339 cannot express (a year outside [0,9999], a zone offset of 24 h
// or more): then the whole record is handed to json.Marshal, which returns the
// same error as before, and dst is returned unchanged.
//
// codec_test.go checks every encoder against json.Marshal field by field
// (including a reflection test that fails when a record gains a field the
// encoder does not write) and fuzzes both.

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"

	"github.com/switchboard-bot/switchboard/memory"

	"github.com/switchboard-bot/switchboard/internal/jsonlite"
)

// appendInboxItem appends the JSON of *it (as json.Marshal writes it).
func appendInboxItem(dst []byte, it *memory.InboxItem) ([]byte, error) {
	w := recordWriter{b: dst}
	w.raw(`{"id":`)
	w.uint(it.ID)
	w.raw(`,"channel":`)
	w.str(it.Channel)
	w.raw(`,"message_id":`)
	w.str(it.MessageID)
	w.raw(`,"session_key":`)
	w.str(it.SessionKey)
	if len(it.Payload) > 0 {
		w.raw(`,"payload":`)
		w.bytes(it.Payload)
	}
	w.raw(`,"received":`)
	w.time(it.Received)
	w.raw(`,"state":`)
	w.str(it.State)
	w.optStr(`,"turn_id":`, it.TurnID)
	w.optStr(`,"answer":`, it.Answer)
	w.raw(`}`)
	if w.bad {
		return marshalFallback(dst, *it)
	}
	return w.b, nil
}

// appendOutboxRecord appends the JSON of *r (as json.Marshal writes it).
func appendOutboxRecord(dst []byte, r *memory.OutboxRecord) ([]byte, error) {
	w := recordWriter{b: dst}
	w.raw(`{"id":`)
	w.uint(r.ID)
	w.raw(`,"target":`)
	w.str(r.Target)
	w.raw(`,"turn_id":`)
	w.str(r.TurnID)
	w.raw(`,"chunk":`)
	w.int(r.Chunk)
	w.raw(`,"text":`)
	w.str(r.Text)
	w.raw(`,"status":`)
	w.str(r.Status)
	w.optStr(`,"platform_id":`, r.PlatformID)
	w.optStr(`,"error":`, r.Error)
	w.raw(`,"created":`)
	w.time(r.Created)
	w.raw(`,"updated":`)
	w.time(r.Updated)
	w.raw(`}`)
	if w.bad {
		return marshalFallback(dst, *r)
	}
	return w.b, nil
}

// appendAuditRecord appends the JSON of *r (as json.Marshal writes it).
func appendAuditRecord(dst []byte, r *memory.AuditRecord) ([]byte, error) {
	w := recordWriter{b: dst}
	w.raw(`{"id":`)
	w.uint(r.ID)
	w.raw(`,"time":`)
	w.time(r.Time)
	w.raw(`,"actor":`)
	w.str(r.Actor)
	w.raw(`,"action":`)
	w.str(r.Action)
	w.optStr(`,"session":`, r.Session)
	w.optStr(`,"detail":`, r.Detail)
	w.optStr(`,"error":`, r.Error)
	w.raw(`}`)
	if w.bad {
		return marshalFallback(dst, *r)
	}
	return w.b, nil
}

// appendSessionMeta appends the JSON of *m (as json.Marshal writes it).
func appendSessionMeta(dst []byte, m *memory.SessionMeta) ([]byte, error) {
	w := recordWriter{b: dst}
	w.raw(`{"key":`)
	w.str(m.Key)
	w.raw(`,"created":`)
	w.time(m.Created)
	w.raw(`,"updated":`)
	w.time(m.Updated)
	w.raw(`,"last_user_message":`)
	w.time(m.LastUserMessage)
	w.raw(`,"turns":`)
	w.int(m.Turns)
	w.raw(`,"messages":`)
	w.int(m.Messages)
	w.raw(`,"usage":`)
	w.usage(m.Usage)
	w.optStr(`,"persona":`, m.Persona)
	if len(m.Archived) > 0 {
		w.raw(`,"archived":[`)
		for i, id := range m.Archived {
			if i > 0 {
				w.raw(`,`)
			}
			w.str(id)
		}
		w.raw(`]`)
	}
	w.optStr(`,"last_turn_id":`, m.LastTurnID)
	w.raw(`}`)
	if w.bad {
		return marshalFallback(dst, *m)
	}
	return w.b, nil
}

// appendStoredMessage appends the JSON of *m (as json.Marshal writes it).
func appendStoredMessage(dst []byte, m *storedMessage) ([]byte, error) {
	w := recordWriter{b: dst}
	w.raw(`{"turn":`)
	w.uint(m.Turn)
	w.raw(`,"m":`)
	w.message(&m.M)
	w.raw(`}`)
	if w.bad {
		return marshalFallback(dst, *m)
	}
	return w.b, nil
}

// appendStoredTurn appends the JSON of *t (as json.Marshal writes it).
func appendStoredTurn(dst []byte, t *storedTurn) ([]byte, error) {
	w := recordWriter{b: dst}
	w.raw(`{"seq":`)
	w.uint(t.Seq)
	w.raw(`,"id":`)
	w.str(t.ID)
	w.raw(`,"usage":`)
	w.usage(t.Usage)
	w.raw(`,"started":`)
	w.time(t.Started)
	w.raw(`,"ended":`)
	w.time(t.Ended)
	w.raw(`,"finish_reason":`)
	w.str(t.FinishReason)
	if len(t.Sources) > 0 {
		w.raw(`,"sources":[`)
		for i, id := range t.Sources {
			if i > 0 {
				w.raw(`,`)
			}
			w.uint(id)
		}
		w.raw(`]`)
	}
	w.optStr(`,"answer":`, t.Answer)
	w.raw(`,"first":`)
	w.uint(t.First)
	w.raw(`,"count":`)
	w.int(t.Count)
	w.optStr(`,"persona":`, t.Persona)
	w.optStr(`,"job":`, t.Job)
	if len(t.Models) > 0 {
		w.raw(`,"models":[`)
		for i := range t.Models {
			if i > 0 {
				w.raw(`,`)
			}
			m := &t.Models[i]
			w.raw(`{"model":`)
			w.str(m.Model)
			w.optStr(`,"endpoint":`, m.Endpoint)
			w.raw(`,"usage":`)
			w.usage(m.Usage)
			w.raw(`}`)
		}
		w.raw(`]`)
	}
	w.raw(`}`)
	if w.bad {
		return marshalFallback(dst, *t)
	}
	return w.b, nil
}

// marshalFallback appends json.Marshal(v) to dst, or returns dst unchanged
// and json.Marshal's error. The encoders call it only for a record holding a
// time that Time.MarshalJSON rejects, so the caller sees today's error. v is
// passed by value so that the encoders' pointer arguments do not escape.
func marshalFallback(dst []byte, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, data...), nil
}

// recordWriter appends JSON tokens to b; bad records that a time.Time was
// written that Time.MarshalJSON would reject.
type recordWriter struct {
	b   []byte
	bad bool
}

func (w *recordWriter) raw(s string) { w.b = append(w.b, s...) }

func (w *recordWriter) str(s string) { w.b = jsonlite.AppendString(w.b, s) }

// optStr writes the member key (`,"name":`) and s unless s is empty
// (omitempty).
func (w *recordWriter) optStr(key, s string) {
	if s != "" {
		w.b = append(w.b, key...)
		w.b = jsonlite.AppendString(w.b, s)
	}
}

func (w *recordWriter) uint(v uint64) { w.b = strconv.AppendUint(w.b, v, 10) }

func (w *recordWriter) int(v int) { w.b = strconv.AppendInt(w.b, int64(v), 10) }

// bytes writes p as encoding/json writes a []byte: a base64 (standard
// alphabet, padded) string. Callers handle nil/empty (all such fields are
// omitempty).
func (w *recordWriter) bytes(p []byte) {
	w.b = append(w.b, '"')
	w.b = base64.StdEncoding.AppendEncode(w.b, p)
	w.b = append(w.b, '"')
}

// time writes t as Time.MarshalJSON does: RFC 3339 with nanoseconds, trailing
// zeros of the fraction trimmed. A time MarshalJSON rejects sets w.bad.
func (w *recordWriter) time(t time.Time) {
	w.b = append(w.b, '"')
	n0 := len(w.b)
	w.b = t.AppendFormat(w.b, time.RFC3339Nano)
	if !strictRFC3339(w.b[n0:]) {
		w.bad = true
	}
	w.b = append(w.b, '"')
}

func (w *recordWriter) usage(u memory.Usage) {
	w.raw(`{"prompt_tokens":`)
	w.int(u.PromptTokens)
	w.raw(`,"completion_tokens":`)
	w.int(u.CompletionTokens)
	w.raw(`,"total_tokens":`)
	w.int(u.TotalTokens)
	w.raw(`}`)
}

func (w *recordWriter) message(m *memory.Message) {
	w.raw(`{"role":`)
	w.str(m.Role)
	w.optStr(`,"content":`, m.Content)
	w.optStr(`,"reasoning":`, m.Reasoning)
	if len(m.Media) > 0 {
		w.raw(`,"media":[`)
		for i := range m.Media {
			if i > 0 {
				w.raw(`,`)
			}
			md := &m.Media[i]
			w.raw(`{"mime":`)
			w.str(md.MIME)
			w.optStr(`,"name":`, md.Name)
			if md.Size != 0 {
				w.raw(`,"size":`)
				w.int(md.Size)
			}
			w.raw(`}`)
		}
		w.raw(`]`)
	}
	if len(m.ToolCalls) > 0 {
		w.raw(`,"tool_calls":[`)
		for i := range m.ToolCalls {
			if i > 0 {
				w.raw(`,`)
			}
			tc := &m.ToolCalls[i]
			w.raw(`{"id":`)
			w.str(tc.ID)
			w.raw(`,"name":`)
			w.str(tc.Name)
			w.raw(`,"arguments":`)
			w.str(tc.Arguments)
			w.raw(`}`)
		}
		w.raw(`]`)
	}
	w.optStr(`,"tool_call_id":`, m.ToolCallID)
	w.optStr(`,"name":`, m.Name)
	w.raw(`,"time":`)
	w.time(m.Time)
	w.raw(`}`)
}

// strictRFC3339 reports whether b, as time.Time.AppendFormat(RFC3339Nano)
// wrote it, is one Time.MarshalJSON accepts: a year of exactly four digits
// and a zone offset whose hours are below 24 (the same two checks as the
// standard library's appendStrictRFC3339).
func strictRFC3339(b []byte) bool {
	const zoneLen = len("+07:00")
	if len(b) < len("2006-01-02T15:04:05Z") || b[len("2006")] != '-' {
		return false
	}
	if b[len(b)-1] == 'Z' {
		return true
	}
	z := b[len(b)-zoneLen:]
	if z[0] >= '0' && z[0] <= '9' { // three-digit hours
		return false
	}
	return (z[1]-'0')*10+(z[2]-'0') < 24
}
