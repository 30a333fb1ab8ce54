package heartbeat

import (
	"strings"
	"sync"
	"time"
)

// SentEntry is one send_message delivery.
type SentEntry struct {
	Seq        uint64
	TurnID     string
	SessionKey string // the session of the turn that sent it
	Target     string
	Text       string
	MessageIDs []string
	Time       time.Time
}

// SentLog remembers recent send_message deliveries so a turn's final answer
// is not delivered again to a target the turn already sent the same text to.
// It keeps the newest entries only (bounded). Safe for concurrent use.
type SentLog struct {
	mu      sync.Mutex
	seq     uint64
	max     int
	entries []SentEntry
}

// DefaultSentLogSize is the number of entries a SentLog keeps by default.
const DefaultSentLogSize = 1024

// NewSentLog returns a log keeping the newest max entries (<= 0: default).
func NewSentLog(max int) *SentLog {
	if max <= 0 {
		max = DefaultSentLogSize
	}
	return &SentLog{max: max}
}

// Record adds e (Seq is assigned) and returns its sequence number.
func (l *SentLog) Record(e SentEntry) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	e.Seq = l.seq
	e.MessageIDs = append([]string(nil), e.MessageIDs...)
	l.entries = append(l.entries, e)
	if over := len(l.entries) - l.max; over > 0 {
		l.entries = append(l.entries[:0:0], l.entries[over:]...)
	}
	return e.Seq
}

// Mark returns the current sequence number; Since(key, mark) returns what
// was recorded after it.
func (l *SentLog) Mark() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// Since returns the entries of sessionKey recorded after mark, oldest first.
func (l *SentLog) Since(sessionKey string, mark uint64) []SentEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []SentEntry
	for _, e := range l.entries {
		if e.Seq > mark && e.SessionKey == sessionKey {
			out = append(out, e)
		}
	}
	return out
}

// WasSent reports whether turn turnID already sent text (compared with
// whitespace normalized) to target with send_message. The channels handler
// asks this before delivering a final answer.
func (l *SentLog) WasSent(turnID, target, text string) bool {
	if turnID == "" {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.entries {
		if e.TurnID == turnID && e.Target == target && sameText(e.Text, text) {
			return true
		}
	}
	return false
}

// Forget drops the entries of turnID (the turn is over).
func (l *SentLog) Forget(turnID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.entries[:0]
	for _, e := range l.entries {
		if e.TurnID != turnID {
			kept = append(kept, e)
		}
	}
	clear(l.entries[len(kept):])
	l.entries = kept
}

// sameText compares texts with whitespace runs collapsed.
func sameText(a, b string) bool {
	return strings.Join(strings.Fields(a), " ") == strings.Join(strings.Fields(b), " ")
}
