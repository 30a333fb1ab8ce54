package bolt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/storetest"

	"github.com/switchboard-bot/switchboard/internal/jsonlite"
)

// trickyStrings are the strings escaping gets wrong first.
var trickyStrings = []string{
	"",
	"plain ascii",
	`say "hi" \ back\slash \"`,
	"<script>alert('x')</script> & more &amp;",
	"line\nfeed\rreturn\ttab\bback\fform",
	"\x00\x01\x07\x1f\x7f del",
	"sep\u2028line\u2029para",
	"bad utf8: \xff\xfe \xc3 \xe2\x82 \xed\xa0\x80 end\x80",
	"emoji 😀👩‍👩‍👧 café ñ 日本語",
	"\ufffd literal replacement char",
	strings.Repeat("a<b>", 64) + "\xff",
}

// zoneTimes are times in several zones, with and without fractional seconds.
func zoneTimes() []time.Time {
	base := time.Date(2025, 1, 2, 15, 4, 5, 0, time.UTC)
	return []time.Time{
		{},
		base,
		base.Add(123 * time.Millisecond),
		base.Add(100 * time.Nanosecond),
		base.Add(999999999),
		base.In(time.FixedZone("CET", 3600)),
		base.In(time.FixedZone("NPT", 5*3600+45*60)).Add(1),
		base.In(time.FixedZone("NST", -(3*3600 + 30*60))),
		base.In(time.FixedZone("LMT", 1172)), // offset with seconds: RFC 3339 drops them
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Unix(0, 0),
		time.Now(), // carries a monotonic reading
	}
}

// badTimes are times Time.MarshalJSON rejects.
func badTimes() []time.Time {
	return []time.Time{
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2025, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 24*3600)),
		time.Date(2025, 1, 1, 0, 0, 0, 0, time.FixedZone("farther", -(100*3600+60))),
	}
}

// encoders runs every append encoder on a value of its record type.
var encoders = []struct {
	name string
	enc  func(dst []byte, v any) ([]byte, error)
	zero func() any // a pointer to a zero value of the record type
}{
	{"InboxItem", func(d []byte, v any) ([]byte, error) { return appendInboxItem(d, v.(*memory.InboxItem)) },
		func() any { return new(memory.InboxItem) }},
	{"OutboxRecord", func(d []byte, v any) ([]byte, error) { return appendOutboxRecord(d, v.(*memory.OutboxRecord)) },
		func() any { return new(memory.OutboxRecord) }},
	{"AuditRecord", func(d []byte, v any) ([]byte, error) { return appendAuditRecord(d, v.(*memory.AuditRecord)) },
		func() any { return new(memory.AuditRecord) }},
	{"SessionMeta", func(d []byte, v any) ([]byte, error) { return appendSessionMeta(d, v.(*memory.SessionMeta)) },
		func() any { return new(memory.SessionMeta) }},
	{"storedMessage", func(d []byte, v any) ([]byte, error) { return appendStoredMessage(d, v.(*storedMessage)) },
		func() any { return new(storedMessage) }},
	{"storedTurn", func(d []byte, v any) ([]byte, error) { return appendStoredTurn(d, v.(*storedTurn)) },
		func() any { return new(storedTurn) }},
}

// checkSame fails t unless enc(prefix, v) writes prefix followed by exactly
// json.Marshal(v), or, when json.Marshal fails, returns its error and prefix
// untouched.
func checkSame(t testing.TB, name string, enc func([]byte, any) ([]byte, error), v any) {
	t.Helper()
	want, wantErr := json.Marshal(v)
	prefix := []byte("prefix")
	got, err := enc(append([]byte(nil), prefix...), v)
	switch {
	case wantErr != nil:
		if err == nil || err.Error() != wantErr.Error() {
			t.Fatalf("%s: error %v, json.Marshal's is %v\nvalue %#v", name, err, wantErr, v)
		}
		if !bytes.Equal(got, prefix) {
			t.Fatalf("%s: on error dst is %q, want it unchanged", name, got)
		}
	case err != nil:
		t.Fatalf("%s: unexpected error %v (json.Marshal wrote %s)", name, err, want)
	case !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], want):
		t.Fatalf("%s:\n got %s\nwant %s\nvalue %#v", name, got, want, v)
	}
}

func TestCodecMatchesEncodingJSON(t *testing.T) {
	now := time.Date(2025, 3, 4, 5, 6, 7, 890_000_000, time.UTC)
	msg := memory.Message{Role: memory.RoleAssistant, Content: "c", Reasoning: "r", ToolCallID: "id", Name: "n", Time: now,
		Media:     []memory.MediaRef{{MIME: "image/png", Name: "a.png", Size: 42}, {MIME: "image/jpeg"}},
		ToolCalls: []memory.ToolCall{{ID: "c1", Name: "web_fetch", Arguments: `{"url":"https://x/?a=1&b=<2>"}`}, {}}}
	tests := []struct {
		name string
		v    any
	}{
		{"inbox zero", &memory.InboxItem{}},
		{"inbox pending", &memory.InboxItem{ID: 7, Channel: "telegram", MessageID: "12:34", SessionKey: "telegram:12",
			Payload: []byte(`{"text":"hi <b>"}`), Received: now, State: memory.InboxPending}},
		{"inbox answered", &memory.InboxItem{ID: 1<<64 - 1, Payload: []byte{0, 0xff, 1}, State: memory.InboxAnswered, TurnID: "t9", Answer: "ok & done"}},
		{"inbox empty payload", &memory.InboxItem{Payload: []byte{}}},
		{"outbox zero", &memory.OutboxRecord{}},
		{"outbox delivered", &memory.OutboxRecord{ID: 3, Target: "slack:C1:17.1", TurnID: "t", Chunk: 2, Text: "x\ny",
			Status: memory.OutboxDelivered, PlatformID: "p1", Created: now, Updated: now.Add(time.Second)}},
		{"outbox failed negative chunk", &memory.OutboxRecord{Chunk: -1, Status: memory.OutboxFailed, Error: `429 "slow down"`}},
		{"audit zero", &memory.AuditRecord{}},
		{"audit full", &memory.AuditRecord{ID: 5, Time: now, Actor: "admin", Action: "config.edit", Session: "s", Detail: "d", Error: "e"}},
		{"meta zero", &memory.SessionMeta{}},
		{"meta nil vs empty archived", &memory.SessionMeta{Key: "k", Archived: []string{}}},
		{"meta full", &memory.SessionMeta{Key: "discord:1", Created: now, Updated: now, LastUserMessage: now, Turns: 3, Messages: 12,
			Usage: memory.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}, Persona: "pirate",
			Archived: []string{"0001-20250102T150405Z", "0002-x"}, LastTurnID: "t3"}},
		{"message zero", &storedMessage{}},
		{"message full", &storedMessage{Turn: 9, M: msg}},
		{"message empty slices", &storedMessage{M: memory.Message{Role: memory.RoleUser, Media: []memory.MediaRef{}, ToolCalls: []memory.ToolCall{}}}},
		{"turn zero", &storedTurn{}},
		{"turn full", &storedTurn{Seq: 4, ID: "t4", Usage: memory.Usage{TotalTokens: -1}, Started: now, Ended: now.Add(time.Minute),
			FinishReason: "stop", Sources: []uint64{1, 1 << 63}, Answer: "a", First: 10, Count: 4,
			Persona: "pirate <&>", Job: "daily-report", Models: []memory.ModelUsage{
				{Model: "gpt-4o-mini", Endpoint: "primary", Usage: memory.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}},
				{Model: "llama\u2028", Usage: memory.Usage{PromptTokens: 4}}}}},
		{"turn empty sources", &storedTurn{Sources: []uint64{}}},
		{"turn empty models", &storedTurn{Models: []memory.ModelUsage{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkSame(t, tt.name, encodeAny, tt.v)
		})
	}
}

// encodeAny dispatches to the encoder of v's record type.
func encodeAny(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case *memory.InboxItem:
		return appendInboxItem(dst, v)
	case *memory.OutboxRecord:
		return appendOutboxRecord(dst, v)
	case *memory.AuditRecord:
		return appendAuditRecord(dst, v)
	case *memory.SessionMeta:
		return appendSessionMeta(dst, v)
	case *storedMessage:
		return appendStoredMessage(dst, v)
	case *storedTurn:
		return appendStoredTurn(dst, v)
	}
	panic(fmt.Sprintf("no encoder for %T", v))
}

// TestCodecStringsAndTimes puts each tricky string into every string field and
// each time (valid or not) into every time field of every record type.
func TestCodecStringsAndTimes(t *testing.T) {
	times := append(zoneTimes(), badTimes()...)
	for _, e := range encoders {
		for i, s := range trickyStrings {
			v := e.zero()
			setAll(reflect.ValueOf(v).Elem(), s, zoneTimes()[1])
			checkSame(t, fmt.Sprintf("%s string %d", e.name, i), e.enc, v)
		}
		for i, tm := range times {
			v := e.zero()
			setAll(reflect.ValueOf(v).Elem(), "s", tm)
			checkSame(t, fmt.Sprintf("%s time %d (%v)", e.name, i, tm), e.enc, v)
		}
	}
}

// setAll sets every string field of v (nested too, one element per slice) to
// s and every time.Time to tm.
func setAll(v reflect.Value, s string, tm time.Time) {
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(tm))
	case v.Kind() == reflect.String:
		v.SetString(s)
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			setAll(v.Field(i), s, tm)
		}
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		setAll(v.Index(0), s, tm)
	}
}

// TestCodecWritesEveryField fills every field of every record type (nested
// ones too) with a non-zero value: a field added to a record without teaching
// its encoder fails here.
func TestCodecWritesEveryField(t *testing.T) {
	for _, e := range encoders {
		v := e.zero()
		f := filler{data: []byte("seed for every field"), nonZero: true}
		f.fill(reflect.ValueOf(v).Elem())
		if z := zeroField(reflect.ValueOf(v).Elem(), e.name); z != "" {
			t.Fatalf("filler left %s zero", z)
		}
		checkSame(t, e.name, e.enc, v)
	}
}

// zeroField names the first field of v that is zero, or "".
func zeroField(v reflect.Value, path string) string {
	if v.IsZero() {
		return path
	}
	if v.Kind() == reflect.Struct && v.Type() != reflect.TypeFor[time.Time]() {
		for i := range v.NumField() {
			if z := zeroField(v.Field(i), path+"."+v.Type().Field(i).Name); z != "" {
				return z
			}
		}
	}
	return ""
}

// TestCodecDoesNotAllocate holds the encoders to their point: with room in
// dst, encoding a turn's records allocates nothing.
func TestCodecDoesNotAllocate(t *testing.T) {
	recs := turnRecords()
	buf := make([]byte, 0, 64<<10)
	allocs := testing.AllocsPerRun(50, func() {
		var err error
		if buf, err = recs.appendAll(buf[:0]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("encoding a turn's records: %v allocations, want 0", allocs)
	}
}

// filler fills a value from a byte stream (a fuzz input), every field
// reachable by reflection, so the fuzzers reach each field of each record.
type filler struct {
	data    []byte
	pos     int
	nonZero bool // no zero field, no empty slice (TestCodecWritesEveryField)
}

func (f *filler) byte() byte {
	if len(f.data) == 0 {
		return 0
	}
	b := f.data[f.pos%len(f.data)]
	f.pos++
	return b
}

func (f *filler) u64() uint64 {
	var u uint64
	for range 8 {
		u = u<<8 | uint64(f.byte())
	}
	return u
}

func (f *filler) str() string {
	if c := f.byte(); c%4 == 0 {
		return trickyStrings[1+int(c/4)%(len(trickyStrings)-1)]
	}
	n := int(f.byte() % 24)
	if f.nonZero && n == 0 {
		n = 1
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = f.byte()
	}
	if f.nonZero && n == 1 && b[0] == 0 {
		b[0] = 'x'
	}
	return string(b)
}

func (f *filler) time() time.Time {
	c := f.byte()
	if c%16 == 0 && !f.nonZero {
		return time.Time{}
	}
	const lo, hi = -62135596800, 253402300799 // 0001-01-01 .. 9999-12-31 in Unix seconds
	sec := lo + int64(f.u64()%uint64(hi-lo+1))
	if c%16 == 1 {
		sec = int64(f.u64()) // mostly outside [0,9999]: json.Marshal fails
	}
	nsec := int64(f.u64() % 1e9)
	switch c % 5 {
	case 0:
		nsec = 0
	case 1:
		nsec -= nsec % 1e6 // milliseconds: trailing zeros trimmed
	}
	tm := time.Unix(sec, nsec).UTC()
	if c%3 == 0 {
		off := int(int32(f.u64()) % (26 * 3600)) // up to 26 h: ≥ 24 h is rejected
		tm = tm.In(time.FixedZone("z", off))
	}
	return tm
}

func (f *filler) fill(v reflect.Value) {
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(f.time()))
	case v.Kind() == reflect.String:
		v.SetString(f.str())
	case v.Kind() == reflect.Int || v.Kind() == reflect.Int64:
		n := int64(f.u64())
		if f.nonZero && n == 0 {
			n = 1
		}
		v.SetInt(n)
	case v.Kind() == reflect.Uint64:
		n := f.u64()
		if f.nonZero && n == 0 {
			n = 1
		}
		v.SetUint(n)
	case v.Type() == reflect.TypeFor[[]byte]():
		n := int(f.byte() % 40)
		if f.nonZero && n == 0 {
			n = 1
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = f.byte()
		}
		v.SetBytes(b)
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			f.fill(v.Field(i))
		}
	case v.Kind() == reflect.Slice:
		n := int(f.byte() % 4)
		switch {
		case f.nonZero && n == 0:
			n = 1
		case n == 3:
			return // nil
		}
		v.Set(reflect.MakeSlice(v.Type(), n, n)) // n == 0: empty, not nil
		for i := range n {
			f.fill(v.Index(i))
		}
	default:
		panic("filler: unhandled kind " + v.Kind().String() + " (teach the filler and the encoder)")
	}
}

func FuzzCodecRecords(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09"))
	f.Add([]byte("\xff\xfe<&>\"\\\u2028 😀 \x1f"))
	f.Add(bytes.Repeat([]byte{0x10, 0x21, 0x33, 0x41}, 16))
	f.Add([]byte("\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, e := range encoders {
			v := e.zero()
			fl := filler{data: data}
			fl.fill(reflect.ValueOf(v).Elem())
			checkSame(t, e.name, e.enc, v)
		}
	})
}

func FuzzCodecString(f *testing.F) {
	for _, s := range trickyStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := jsonlite.AppendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("jsonlite.AppendString(%q) = %s, want %s", s, got, want)
		}
		for _, e := range encoders {
			v := e.zero()
			setAll(reflect.ValueOf(v).Elem(), s, time.Time{})
			checkSame(t, e.name, e.enc, v)
		}
	})
}

func FuzzCodecTime(f *testing.F) {
	for _, tm := range append(zoneTimes(), badTimes()...) {
		_, off := tm.Zone()
		f.Add(tm.Unix(), int64(tm.Nanosecond()), off)
	}
	f.Fuzz(func(t *testing.T, sec, nsec int64, off int) {
		tm := time.Unix(sec, nsec).In(time.FixedZone("z", off))
		for _, e := range encoders {
			v := e.zero()
			setAll(reflect.ValueOf(v).Elem(), "s", tm)
			checkSame(t, e.name, e.enc, v)
		}
	})
}

// records is what one message's turn writes in the bolt store: the stored
// messages and turn header of a one-tool-call turn, the session metadata, the
// inbox item marked answered, one outbox chunk and one audit record.
type records struct {
	msgs  []storedMessage
	turn  storedTurn
	meta  memory.SessionMeta
	inbox memory.InboxItem
	out   memory.OutboxRecord
	audit memory.AuditRecord
}

func turnRecords() *records {
	now := time.Date(2025, 6, 7, 8, 9, 10, 123456789, time.UTC)
	turn := storetest.ToolTurn(42, 1)
	r := &records{
		turn: storedTurn{Seq: 42, ID: turn.ID, Usage: memory.Usage{PromptTokens: 812, CompletionTokens: 64, TotalTokens: 876},
			Started: now, Ended: now.Add(1500 * time.Millisecond), FinishReason: "stop", Sources: []uint64{4711},
			Answer: turn.Answer, First: 160, Count: len(turn.Messages)},
		meta: memory.SessionMeta{Key: "discord:123456789012345678", Created: now.Add(-time.Hour), Updated: now,
			LastUserMessage: now, Turns: 42, Messages: 164, Usage: memory.Usage{TotalTokens: 36000}, LastTurnID: turn.ID},
		inbox: memory.InboxItem{ID: 4711, Channel: "discord", MessageID: "1234567890123456789", SessionKey: "discord:123456789012345678",
			Payload: []byte(`{"channel":"discord","chat_id":"123456789012345678","message_id":"1234567890123456789",` +
				`"sender":{"id":"98765","name":"Ada <admin>"},"text":"what time is it in Tokyo? & why","direct":true,"time":"2025-06-07T08:09:10Z"}`),
			Received: now, State: memory.InboxAnswered, TurnID: turn.ID, Answer: "It is 17:09 in Tokyo (JST, UTC+9)."},
		out: memory.OutboxRecord{ID: 9000, Target: "discord:123456789012345678", TurnID: turn.ID, Text: "It is 17:09 in Tokyo (JST, UTC+9).",
			Status: memory.OutboxPending, Created: now, Updated: now},
		audit: memory.AuditRecord{ID: 31337, Time: now, Actor: "discord:98765", Action: "turn", Session: "discord:123456789012345678",
			Detail: "model=gpt-4o-mini tools=current_time tokens=876 duration=1.5s"},
	}
	for i, m := range turn.Messages {
		m.Time = now.Add(time.Duration(i) * time.Millisecond)
		r.msgs = append(r.msgs, storedMessage{Turn: 42, M: m})
	}
	return r
}

// appendAll appends every record (as a putJSON of each would write them).
func (r *records) appendAll(dst []byte) ([]byte, error) {
	var err error
	for i := range r.msgs {
		if dst, err = appendStoredMessage(dst, &r.msgs[i]); err != nil {
			return dst, err
		}
	}
	steps := []func([]byte) ([]byte, error){
		func(d []byte) ([]byte, error) { return appendStoredTurn(d, &r.turn) },
		func(d []byte) ([]byte, error) { return appendSessionMeta(d, &r.meta) },
		func(d []byte) ([]byte, error) { return appendInboxItem(d, &r.inbox) },
		func(d []byte) ([]byte, error) { return appendOutboxRecord(d, &r.out) },
		func(d []byte) ([]byte, error) { return appendAuditRecord(d, &r.audit) },
	}
	for _, step := range steps {
		if dst, err = step(dst); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// marshalAll is appendAll through json.Marshal, one allocation per record at
// least (what putJSON does today).
func (r *records) marshalAll(dst []byte) ([]byte, error) {
	put := func(v any) error {
		data, err := json.Marshal(v)
		dst = append(dst, data...)
		return err
	}
	for i := range r.msgs {
		if err := put(&r.msgs[i]); err != nil {
			return dst, err
		}
	}
	for _, v := range [...]any{&r.turn, &r.meta, &r.inbox, &r.out, &r.audit} {
		if err := put(v); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// BenchmarkEncodeRecords compares json.Marshal with the append encoders, per
// record type and for all the records of one turn.
func BenchmarkEncodeRecords(b *testing.B) {
	r := turnRecords()
	cases := []struct {
		name string
		v    any
	}{
		{"InboxItem", &r.inbox}, {"OutboxRecord", &r.out}, {"AuditRecord", &r.audit},
		{"SessionMeta", &r.meta}, {"storedMessage", &r.msgs[1]}, {"storedTurn", &r.turn},
	}
	for _, c := range cases {
		b.Run(c.name+"/json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(c.v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/append", func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 4096)
			for b.Loop() {
				var err error
				if buf, err = encodeAny(buf[:0], c.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, c := range []struct {
		name string
		enc  func([]byte) ([]byte, error)
	}{{"Turn/json", r.marshalAll}, {"Turn/append", r.appendAll}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 64<<10)
			for b.Loop() {
				var err error
				if buf, err = c.enc(buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
