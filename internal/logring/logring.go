// Package logring keeps the daemon's last log records in memory for the web
// console's Logs page (issue 34): a slog.Handler that passes every record on
// to the daemon's real handler and also appends it, as one line of text, to
// a bounded ring.
//
// Design decisions:
//
//   - The ring holds what the log holds: a record reaches it exactly when the
//     wrapped handler takes it (its Enabled decides), so log.level governs
//     both and a quiet daemon costs nothing more.
//   - Bounded twice: at most MaxRecords records and MaxBytes bytes of text
//     (the oldest go first), and each record's text is cut to
//     MaxRecordBytes, so a flood of long lines cannot grow the daemon.
//   - Text is "message key=value …" like slog's text handler (values quoted
//     when they hold spaces, quotes or '='), groups as dotted keys. Values
//     that implement slog.LogValuer are resolved first, so a config Secret
//     renders "[redacted]" here as in the log.
//   - Every line passes through the redaction function (SetRedact) before it
//     is stored: the daemon scrubs URLs with credentials and every configured
//     secret value. The ring never holds what the page may not show.
//   - Readers ask for the tail at or above a level (Tail) and wait for news
//     on Changed, a channel closed at the next append: no polling.
package logring

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// Defaults of Options.
const (
	DefaultMaxRecords     = 2000
	DefaultMaxBytes       = 1 << 20 // 1 MiB of text
	DefaultMaxRecordBytes = 4 << 10 // 4 KiB per record
)

// Record is one log record as the ring keeps it.
type Record struct {
	Seq   uint64 // 1, 2, … in the order records arrived
	Time  time.Time
	Level slog.Level
	Text  string // the message and the attributes, redacted
}

// Options bound a Ring.
type Options struct {
	MaxRecords     int // DefaultMaxRecords when <= 0
	MaxBytes       int // DefaultMaxBytes when <= 0
	MaxRecordBytes int // DefaultMaxRecordBytes when <= 0
}

// Ring is the last records, oldest first. It is safe for concurrent use.
type Ring struct {
	o      Options
	redact atomic.Pointer[func(string) string]

	mu      sync.Mutex
	buf     []Record // circular, len == MaxRecords once full
	head    int      // index of the oldest record
	n       int      // records held
	bytes   int      // text bytes held
	seq     uint64
	changed chan struct{} // closed at the next append; nil until asked for
}

// New returns an empty ring.
func New(o Options) *Ring {
	if o.MaxRecords <= 0 {
		o.MaxRecords = DefaultMaxRecords
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxRecordBytes <= 0 {
		o.MaxRecordBytes = DefaultMaxRecordBytes
	}
	return &Ring{o: o}
}

// SetRedact sets the function every record's text passes through before it
// is stored (nil: none).
func (r *Ring) SetRedact(f func(string) string) {
	if f == nil {
		r.redact.Store(nil)
		return
	}
	r.redact.Store(&f)
}

// Add appends one record (the handler's path; tests and callers that log
// elsewhere may use it too). text is redacted and cut here.
func (r *Ring) Add(t time.Time, level slog.Level, text string) {
	if f := r.redact.Load(); f != nil {
		text = (*f)(text)
	}
	text = cut(text, r.o.MaxRecordBytes)
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.n > 0 && (r.n >= r.o.MaxRecords || r.bytes+len(text) > r.o.MaxBytes) {
		old := &r.buf[r.head]
		r.bytes -= len(old.Text)
		*old = Record{}
		r.head = (r.head + 1) % len(r.buf)
		r.n--
	}
	r.seq++
	rec := Record{Seq: r.seq, Time: t, Level: level, Text: text}
	if r.n == len(r.buf) { // every slot used, and fewer than MaxRecords (evicted above otherwise): grow
		grown := make([]Record, 0, min(r.o.MaxRecords, max(64, 2*len(r.buf))))
		grown = append(grown, r.buf[r.head:]...)
		grown = append(grown, r.buf[:r.head]...)
		r.buf, r.head = append(grown, rec), 0
	} else {
		r.buf[(r.head+r.n)%len(r.buf)] = rec
	}
	r.n++
	r.bytes += len(text)
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// Tail returns up to n of the newest records at or above level, oldest
// first (n <= 0: all of them).
func (r *Ring) Tail(level slog.Level, n int) []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Record
	for i := r.n - 1; i >= 0 && (n <= 0 || len(out) < n); i-- {
		rec := r.buf[(r.head+i)%len(r.buf)]
		if rec.Level >= level {
			out = append(out, rec)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// Len returns the records held and their text's bytes.
func (r *Ring) Len() (records, bytes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, r.bytes
}

// Changed returns a channel closed when the next record is added. Take it
// before reading the tail so no record falls in between.
func (r *Ring) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return r.changed
}

// cut shortens s to at most n bytes on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = " …[cut]"
	end := max(0, n-len(mark))
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + mark
}

// Handler returns a handler that passes records to next and adds each one
// next takes to r.
func (r *Ring) Handler(next slog.Handler) slog.Handler {
	return &tee{next: next, ring: r}
}

// tee is the handler Ring.Handler returns.
type tee struct {
	next   slog.Handler
	ring   *Ring
	attrs  string // attributes of WithAttrs, formatted
	groups string // "a.b." of WithGroup
}

func (t *tee) Enabled(ctx context.Context, l slog.Level) bool { return t.next.Enabled(ctx, l) }

func (t *tee) Handle(ctx context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Message)
	if t.attrs != "" {
		b.WriteByte(' ')
		b.WriteString(t.attrs)
	}
	rec.Attrs(func(a slog.Attr) bool {
		writeAttr(&b, t.groups, a)
		return true
	})
	t.ring.Add(rec.Time, rec.Level, b.String())
	return t.next.Handle(ctx, rec)
}

func (t *tee) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return t
	}
	var b strings.Builder
	b.WriteString(t.attrs)
	for _, a := range as {
		writeAttr(&b, t.groups, a)
	}
	return &tee{next: t.next.WithAttrs(as), ring: t.ring, attrs: strings.TrimPrefix(b.String(), " "), groups: t.groups}
}

func (t *tee) WithGroup(name string) slog.Handler {
	if name == "" {
		return t
	}
	return &tee{next: t.next.WithGroup(name), ring: t.ring, attrs: t.attrs, groups: t.groups + name + "."}
}

// writeAttr writes " key=value" (groups as dotted keys; empty attributes and
// empty groups are left out, as slog's handlers do).
func writeAttr(b *strings.Builder, prefix string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		g := a.Value.Group()
		if len(g) == 0 {
			return
		}
		if a.Key != "" {
			prefix += a.Key + "."
		}
		for _, ga := range g {
			writeAttr(b, prefix, ga)
		}
		return
	}
	b.WriteByte(' ')
	b.WriteString(quote(prefix + a.Key))
	b.WriteByte('=')
	b.WriteString(quote(valueText(a.Value)))
}

func valueText(v slog.Value) string {
	switch v.Kind() {
	case slog.KindTime:
		return v.Time().Format(time.RFC3339Nano)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return err.Error()
		}
	}
	return v.String()
}

// quote quotes s when it would not read back as one value.
func quote(s string) string {
	if s == "" {
		return `""`
	}
	for _, c := range s {
		if c == '=' || c == '"' || unicode.IsSpace(c) || !unicode.IsPrint(c) {
			return strconv.Quote(s)
		}
	}
	return s
}
