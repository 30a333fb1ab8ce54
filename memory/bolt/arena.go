package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/switchboard-bot/switchboard/memory"

	bbolt "go.etcd.io/bbolt"
)

// txArena holds the keys and values of one write transaction's records in
// one buffer, encoded with the appendX encoders of codec.go. bolt keeps each
// Put's key and value until the commit; the arena only ever appends, so a
// slice it handed out is never overwritten (when the buffer grows, the old one
// stays with the slices that use it). An arena lives inside one run of a
// batch function: a re-run starts a new one.
type txArena struct{ b []byte }

func newArena(size int) txArena { return txArena{b: make([]byte, 0, size)} }

// mark is where the next record starts.
func (a *txArena) mark() int { return len(a.b) }

// since returns what was appended after mark m, capped so that a later append
// cannot write into it.
func (a *txArena) since(m int) []byte { return a.b[m:len(a.b):len(a.b)] }

// key appends seq as an 8-byte big-endian key.
func (a *txArena) key(seq uint64) []byte {
	m := a.mark()
	a.b = binary.BigEndian.AppendUint64(a.b, seq)
	return a.since(m)
}

// Pending records are changed in place on the hot path: the inbox item a
// turn answers and the send intent a receipt completes. Their JSON, as
// appendInboxItem and appendOutboxRecord write it, ends in fields whose shape
// is known, so the change rewrites that tail instead of decoding and
// re-encoding the whole record (its payload, its text). The result is byte for
// byte what json.Marshal writes for the changed record (arena_test.go); a
// record of any other shape (written by another version, already changed)
// reports ok false and the caller decodes it.

// inboxPendingTail ends a pending inbox item: state is its last field, and
// turn_id and answer (omitempty) are empty.
const inboxPendingTail = `,"state":"pending"}`

// appendAnsweredItem appends item rec (a pending inbox item's JSON) in state
// answered with turnID and answer.
func appendAnsweredItem(dst, rec []byte, turnID, answer string) ([]byte, bool) {
	if !bytes.HasSuffix(rec, []byte(inboxPendingTail)) {
		return dst, false
	}
	w := recordWriter{b: dst}
	w.b = append(w.b, rec[:len(rec)-len(`"pending"}`)]...)
	w.raw(`"answered"`)
	w.optStr(`,"turn_id":`, turnID)
	w.optStr(`,"answer":`, answer)
	w.raw(`}`)
	return w.b, true
}

// outboxPendingMark precedes the times of a send intent without a receipt:
// status pending, no platform_id, no error. `,"` cannot occur inside a JSON
// string (its quotes are escaped), so the last match is the field itself.
const outboxPendingMark = `,"status":"pending","created":`

// appendReceipt appends outbox record rec (a pending intent's JSON) completed
// with status, platformID, errText, updated now.
func appendReceipt(dst, rec []byte, status, platformID, errText string, now time.Time) ([]byte, bool) {
	i := bytes.LastIndex(rec, []byte(outboxPendingMark))
	if i < 0 {
		return dst, false
	}
	times := rec[i+len(outboxPendingMark):] // "created","updated":"updated"}
	j := bytes.Index(times, []byte(`,"updated":"`))
	if j < 2 || !isQuotedTime(times[:j]) || !isQuotedTime(times[j+len(`,"updated":`):len(times)-1]) ||
		times[len(times)-1] != '}' {
		return dst, false
	}
	w := recordWriter{b: dst}
	w.b = append(w.b, rec[:i]...)
	w.raw(`,"status":`)
	w.str(status)
	w.optStr(`,"platform_id":`, platformID)
	w.optStr(`,"error":`, errText)
	w.raw(`,"created":`)
	w.b = append(w.b, times[:j]...)
	w.raw(`,"updated":`)
	w.time(now)
	w.raw(`}`)
	if w.bad {
		return dst, false
	}
	return w.b, true
}

// isQuotedTime reports whether b is a quoted string without quotes or
// escapes inside, as a written time is.
func isQuotedTime(b []byte) bool {
	return len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' && !bytes.ContainsAny(b[1:len(b)-1], `"\`)
}

// put appends the record enc writes and Puts it under seq's key.
func (a *txArena) put(b *bbolt.Bucket, seq uint64, enc func([]byte) ([]byte, error)) error {
	m := a.mark()
	var err error
	if a.b, err = enc(a.b); err != nil {
		a.b = a.b[:m]
		return fmt.Errorf("encode record %d: %w", seq, err)
	}
	v := a.since(m)
	return b.Put(a.key(seq), v)
}

// Arena sizes: the records' text plus room for their fields; a short guess
// costs one more allocation, never a wrong write.
func turnArenaSize(t memory.Turn) int {
	n := 512 + len(t.Answer) + len(t.Persona) + len(t.Job)
	for _, m := range t.Models {
		n += 128 + len(m.Model) + len(m.Endpoint)
	}
	for _, m := range t.Messages {
		n += 256 + len(m.Content) + len(m.Reasoning)
		for _, tc := range m.ToolCalls {
			n += 64 + len(tc.Name) + len(tc.Arguments)
		}
	}
	return n
}

func commitArenaSize(c memory.TurnCommit) int {
	n := 256
	if c.Turn != nil {
		n += turnArenaSize(*c.Turn)
	}
	for _, r := range c.Intents {
		n += 256 + len(r.Text)
	}
	for _, r := range c.Audit {
		n += 256 + len(r.Detail)
	}
	return n
}

func deliveryArenaSize(d memory.DeliveryRecord) int {
	n := 256
	for _, r := range d.Receipts {
		n += 256 + len(r.PlatformID) + len(r.Error)
	}
	for _, r := range d.Intents {
		n += 256 + len(r.Text)
	}
	for _, r := range d.Audit {
		n += 256 + len(r.Detail)
	}
	return n
}
