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

	"github.com/switchboard-bot/switchboard/internal/jsonlite"
)

// decoders runs every fast-path decoder on a value of its record type.
var decoders = []struct {
	name string
	dec  func(data []byte, v any) bool
	zero func() any // a pointer to a zero value of the record type
}{
	{"SessionMeta", func(d []byte, v any) bool { return decodeSessionMeta(d, v.(*memory.SessionMeta)) },
		func() any { return new(memory.SessionMeta) }},
	{"storedMessage", func(d []byte, v any) bool { return decodeStoredMessage(d, v.(*storedMessage)) },
		func() any { return new(storedMessage) }},
	{"InboxItem", func(d []byte, v any) bool { return decodeInboxItem(d, v.(*memory.InboxItem)) },
		func() any { return new(memory.InboxItem) }},
	{"OutboxRecord", func(d []byte, v any) bool { return decodeOutboxRecord(d, v.(*memory.OutboxRecord)) },
		func() any { return new(memory.OutboxRecord) }},
}

// decodeAny dispatches to the decoder of v's record type.
func decodeAny(data []byte, v any) bool {
	switch v := v.(type) {
	case *memory.SessionMeta:
		return decodeSessionMeta(data, v)
	case *storedMessage:
		return decodeStoredMessage(data, v)
	case *memory.InboxItem:
		return decodeInboxItem(data, v)
	case *memory.OutboxRecord:
		return decodeOutboxRecord(data, v)
	}
	panic(fmt.Sprintf("no decoder for %T", v))
}

// checkSound fails t if dec accepts data but json.Unmarshal into a zero value
// fails or decodes something else, or if dec rejects data and leaves *v
// non-zero. It reports whether dec accepted data.
func checkSound(t testing.TB, name string, dec func([]byte, any) bool, zero func() any, data []byte) bool {
	t.Helper()
	v := zero()
	f := filler{data: []byte("stale value"), nonZero: true} // a reused value: nothing may survive
	f.fill(reflect.ValueOf(v).Elem())
	if !dec(data, v) {
		if !reflect.ValueOf(v).Elem().IsZero() {
			t.Fatalf("%s: rejected %q but left %#v (the fallback would merge into it)", name, data, v)
		}
		return false
	}
	ref := zero()
	if err := json.Unmarshal(data, ref); err != nil {
		t.Fatalf("%s: accepted %q, json.Unmarshal fails: %v\ngot %#v", name, data, err, v)
	}
	if !reflect.DeepEqual(v, ref) {
		t.Fatalf("%s: decoded %q differently\n got %#v\nwant %#v", name, data, v, ref)
	}
	return true
}

// decodable lists records of every decodable type: one turn's records, the
// tricky strings and zone times in every field, and filler values.
func decodable() []any {
	r := turnRecords()
	vs := []any{&r.meta, &r.inbox, &r.out}
	for i := range r.msgs {
		vs = append(vs, &r.msgs[i])
	}
	for _, d := range decoders {
		for _, s := range trickyStrings {
			v := d.zero()
			setAll(reflect.ValueOf(v).Elem(), s, zoneTimes()[1])
			vs = append(vs, v)
		}
		for _, tm := range zoneTimes() {
			v := d.zero()
			setAll(reflect.ValueOf(v).Elem(), "s", tm)
			vs = append(vs, v)
		}
		for seed := range 200 {
			v := d.zero()
			f := filler{data: []byte(fmt.Sprintf("seed %d: \x00\x7f\xff%c", seed, rune(seed*7919)))}
			f.fill(reflect.ValueOf(v).Elem())
			vs = append(vs, v)
		}
	}
	return vs
}

// TestDecodeRoundTrip decodes what the encoders write: every record they
// encode must take the fast path and read back as json.Unmarshal reads it.
func TestDecodeRoundTrip(t *testing.T) {
	accepted := 0
	for i, v := range decodable() {
		data, err := encodeAny(nil, v)
		if err != nil {
			continue // a time json.Marshal rejects: nothing is stored
		}
		name := fmt.Sprintf("%T #%d", v, i)
		zero := func() any { return reflect.New(reflect.TypeOf(v).Elem()).Interface() }
		if !checkSound(t, name, decodeAny, zero, data) {
			t.Fatalf("%s: fast path rejected the encoder's output %s", name, data)
		}
		accepted++
	}
	if accepted < 700 {
		t.Fatalf("only %d records round-tripped; the filler should give over 700", accepted)
	}
}

// TestDecodeRejects lists inputs json.Unmarshal reads (or rejects) that are
// not the canonical shape: the fast path must report false and leave the
// value zero, so the caller's fallback decides.
func TestDecodeRejects(t *testing.T) {
	const tm = `"2025-01-02T15:04:05Z"`
	msg := func(turn, role, rest string) string {
		return `{"turn":` + turn + `,"m":{"role":` + role + rest + `,"time":` + tm + `}}`
	}
	meta := func(turns, rest string) string {
		return `{"key":"k","created":` + tm + `,"updated":` + tm + `,"last_user_message":` + tm +
			`,"turns":` + turns + `,"messages":1,"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}` + rest + `}`
	}
	tests := []struct{ name, data string }{
		{"empty", ``},
		{"null", `null`},
		{"leading space", ` ` + msg("1", `"user"`, ``)},
		{"trailing space", msg("1", `"user"`, ``) + ` `},
		{"trailing garbage", msg("1", `"user"`, ``) + `x`},
		{"space after colon", `{"turn": 1,"m":{"role":"user","time":` + tm + `}}`},
		{"leading zero", msg("01", `"user"`, ``)},
		{"plus sign", msg("+1", `"user"`, ``)},
		{"negative uint", msg("-1", `"user"`, ``)},
		{"fraction", msg("1.0", `"user"`, ``)},
		{"exponent", msg("1e3", `"user"`, ``)},
		{"uint overflow", msg("18446744073709551616", `"user"`, ``)},
		{"int overflow", meta("9223372036854775808", ``)},
		{"int negative overflow", meta("-9223372036854775809", ``)},
		{"negative zero", meta("-0", ``)},
		{"null string", msg("1", `null`, ``)},
		{"number as string", msg("1", `1`, ``)},
		{"raw control char", msg("1", "\"us\ter\"", ``)},
		{"bad escape", msg("1", `"\'"`, ``)},
		{"short unicode escape", msg("1", `"\u12"`, ``)},
		{"unterminated", `{"turn":1,"m":{"role":"user`},
		{"upper-case key", `{"Turn":1,"m":{"role":"user","time":` + tm + `}}`},
		{"members swapped", `{"m":{"role":"user","time":` + tm + `},"turn":1}`},
		{"unknown member", msg("1", `"user"`, `,"extra":1`)},
		{"duplicate member", msg("1", `"user"`, `,"content":"a","content":"b"`)},
		{"omitempty out of order", msg("1", `"user"`, `,"name":"n","content":"c"`)},
		{"empty tool calls", msg("1", `"user"`, `,"tool_calls":[]`)},
		{"null tool calls", msg("1", `"user"`, `,"tool_calls":null`)},
		{"trailing comma", msg("1", `"user"`, `,"tool_calls":[{"id":"a","name":"b","arguments":"{}"},]`)},
		{"empty archived", meta("1", `,"archived":[]`)},
		{"null time", `{"turn":1,"m":{"role":"user","time":null}}`},
		{"escaped time", `{"turn":1,"m":{"role":"user","time":"2025-01-02T15:04:05\u005a"}}`},
		{"time without zone", `{"turn":1,"m":{"role":"user","time":"2025-01-02T15:04:05"}}`},
		{"payload not base64", `{"id":1,"channel":"c","message_id":"m","session_key":"k","payload":"a?==","received":` + tm + `,"state":"pending"}`},
		{"payload with escape", `{"id":1,"channel":"c","message_id":"m","session_key":"k","payload":"YQ\u003d\u003d","received":` + tm + `,"state":"pending"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, d := range decoders {
				if checkSound(t, d.name, d.dec, d.zero, []byte(tt.data)) {
					t.Fatalf("%s accepted %s", d.name, tt.data)
				}
			}
		})
	}
}

// TestDecodeStrings checks unescaping against encoding/json on the escapes
// the encoders write and on those only other writers use.
func TestDecodeStrings(t *testing.T) {
	raws := []string{
		`plain`, ``, `caf\u00e9 \u00E9`, `\"\\\/\b\f\n\r\t`, `\u003cb\u003e \u0026`, `\u2028\u2029`,
		`\ud83d\ude00 pair`, `\ud83d lone high`, `\ude00 lone low`, `\ud83d\u0041 high then letter`,
		`\ud83d\ud83d\ude00 high high low`, "raw \xff invalid \xed\xa0\x80 surrogate", "raw \u2028 and 😀",
		`\u0000 nul`, "\x7f del", `ends with escape\n`, `\\`, `\ufffd`,
	}
	for _, raw := range raws {
		data := []byte(`{"turn":1,"m":{"role":"` + raw + `","content":"` + raw + `","time":"2025-01-02T15:04:05Z"}}`)
		var m storedMessage
		if !checkSound(t, raw, func(d []byte, v any) bool { return decodeStoredMessage(d, v.(*storedMessage)) },
			func() any { return new(storedMessage) }, data) {
			t.Fatalf("rejected valid string %q", raw)
		}
		_ = decodeStoredMessage(data, &m)
		if m.M.Role != m.M.Content {
			t.Fatalf("role %q and content %q differ", m.M.Role, m.M.Content)
		}
	}
}

// TestDecodeAllocations holds the decoders to their point: they allocate the
// strings and slices they return and nothing else.
func TestDecodeAllocations(t *testing.T) {
	now := `"2025-06-07T08:09:10.123456789Z"`
	tests := []struct {
		name string
		v    any
		max  float64
	}{
		{"meta: key, persona, 2 archived, last turn + archived slice",
			&memory.SessionMeta{Key: "discord:1", Persona: "pirate", Archived: []string{"a1", "a2"}, LastTurnID: "t9",
				Created: time.Unix(1, 0).UTC(), Turns: 3, Usage: memory.Usage{TotalTokens: 9}}, 6},
		{"user message: content, name (role interned)",
			&storedMessage{Turn: 1, M: memory.Message{Role: memory.RoleUser, Content: "hi <you>\n\"quoted\"", Name: "Ada"}}, 2},
		{"tool call message: id, name, arguments + slice",
			&storedMessage{Turn: 1, M: memory.Message{Role: memory.RoleAssistant,
				ToolCalls: []memory.ToolCall{{ID: "c1", Name: "current_time", Arguments: `{"tz":"UTC"}`}}}}, 4},
		{"tool result: content, tool call id, name",
			&storedMessage{Turn: 1, M: memory.Message{Role: memory.RoleTool, Content: "12:00", ToolCallID: "c1", Name: "current_time"}}, 3},
		{"inbox: message id, session key, turn id, answer + payload (channel, state interned)",
			&memory.InboxItem{ID: 1, Channel: "discord", MessageID: "m1", SessionKey: "discord:1", Payload: []byte(`{"text":"hi"}`),
				State: memory.InboxAnswered, TurnID: "t1", Answer: "ok"}, 5},
		{"outbox: target, turn id, text, platform id (status interned)",
			&memory.OutboxRecord{ID: 1, Target: "discord:1", TurnID: "t1", Text: "ok", Status: memory.OutboxDelivered, PlatformID: "p"}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := encodeAny(nil, tt.v)
			if err != nil {
				t.Fatal(err)
			}
			data = bytes.ReplaceAll(data, []byte(`"0001-01-01T00:00:00Z"`), []byte(now))
			v := reflect.New(reflect.TypeOf(tt.v).Elem()).Interface()
			allocs := testing.AllocsPerRun(100, func() {
				if !decodeAny(data, v) {
					t.Fatalf("rejected %s", data)
				}
			})
			if allocs > tt.max {
				t.Fatalf("%v allocations decoding %s, want at most %v", allocs, data, tt.max)
			}
		})
	}
}

// tokenTemplates put a fuzzed token where a value of each kind goes in a
// record, so the fuzzer spends its time inside one token rather than on
// getting the record's frame right.
var tokenTemplates = []string{
	`{"turn":%s,"m":{"role":"user","time":"2025-01-02T15:04:05Z"}}`,
	`{"turn":1,"m":{"role":%s,"content":%[1]s,"time":"2025-01-02T15:04:05Z"}}`,
	`{"turn":1,"m":{"role":"tool","time":%s}}`,
	`{"turn":1,"m":{"role":"assistant","tool_calls":[{"id":"a","name":"b","arguments":%s}],"time":"2025-01-02T15:04:05Z"}}`,
	`{"key":"k","created":"0001-01-01T00:00:00Z","updated":"0001-01-01T00:00:00Z","last_user_message":%s,` +
		`"turns":%[1]s,"messages":0,"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0},"archived":[%[1]s]}`,
	`{"id":1,"channel":"c","message_id":"m","session_key":"k","payload":%s,"received":"0001-01-01T00:00:00Z","state":"pending"}`,
	`{"id":1,"target":"t","turn_id":"x","chunk":%s,"text":"","status":"","created":"0001-01-01T00:00:00Z","updated":"0001-01-01T00:00:00Z"}`,
}

// tokenSeeds are values, in and out of the canonical shape.
var tokenSeeds = []string{
	`0`, `1`, `-1`, `-0`, `01`, `+1`, `1.5`, `1e2`, `18446744073709551615`, `18446744073709551616`,
	`9223372036854775807`, `-9223372036854775808`, `9223372036854775808`, `null`, `true`, `""`,
	`"a"`, `"\u00e9\ud83d\ude00\ud800"`, `"\'"`, "\"\xff\"", "\"\t\"", `"YWJj"`, `"YQ=="`, `"YQ"`, `"Y Q=="`,
	`"2025-01-02T15:04:05Z"`, `"2025-01-02T15:04:05.123456789+05:45"`, `"2025-01-02T15:04:05-23:59"`,
	`"2025-01-02T15:04:05+24:00"`, `"2025-01-02T15:04:05,5Z"`, `"2025-01-02T5:04:05Z"`, `"2025-01-02t15:04:05z"`,
	`"10000-01-02T15:04:05Z"`, `"2025-02-30T15:04:05Z"`, `"2025-01-02T15:04:60Z"`, `"2025-01-02T15:04:05.Z"`,
	`"2025-01-02T15:04:05.1234567891Z"`, `"2025-01-02 15:04:05Z"`, `"a","b"`, `1,2`, `"a",`,
}

// FuzzDecodeRecords is the soundness fuzz: for arbitrary bytes, whenever a
// decoder accepts, json.Unmarshal agrees. Seeds are encoded records (whole
// and truncated) and records with a token spliced in.
//
//	go test ./memory/bolt/ -run '^$' -fuzz FuzzDecodeRecords -fuzztime 30s
func FuzzDecodeRecords(f *testing.F) {
	for i, v := range decodable() {
		if i%7 != 0 { // a sample keeps the seed corpus quick
			continue
		}
		data, err := encodeAny(nil, v)
		if err != nil {
			continue
		}
		f.Add(data)
		f.Add(data[:len(data)*2/3])
	}
	for _, tmpl := range tokenTemplates {
		for _, tok := range tokenSeeds {
			f.Add([]byte(fmt.Sprintf(tmpl, tok)))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, d := range decoders {
			checkSound(t, d.name, d.dec, d.zero, data)
		}
	})
}

// FuzzDecodeToken fuzzes one value (a string with any escapes, a time, an
// integer, base64) inside otherwise canonical records.
//
//	go test ./memory/bolt/ -run '^$' -fuzz FuzzDecodeToken -fuzztime 30s
func FuzzDecodeToken(f *testing.F) {
	for _, tok := range tokenSeeds {
		f.Add(tok)
	}
	for _, s := range trickyStrings {
		f.Add(string(jsonlite.AppendString(nil, s)))
	}
	f.Fuzz(func(t *testing.T, tok string) {
		for _, tmpl := range tokenTemplates {
			data := []byte(fmt.Sprintf(tmpl, tok))
			for _, d := range decoders {
				checkSound(t, d.name, d.dec, d.zero, data)
			}
		}
	})
}

// FuzzDecodeTime fuzzes the time text: the fast path must agree with
// json.Unmarshal on every string it accepts.
//
//	go test ./memory/bolt/ -run '^$' -fuzz FuzzDecodeTime -fuzztime 30s
func FuzzDecodeTime(f *testing.F) {
	for _, tm := range append(zoneTimes(), badTimes()...) {
		f.Add(tm.Format(time.RFC3339Nano))
		f.Add(tm.Format(time.RFC3339))
	}
	f.Add("2025-01-02T15:04:05.000+00:00")
	f.Add("0000-01-01T00:00:00-00:00")
	f.Fuzz(func(t *testing.T, text string) {
		if strings.ContainsAny(text, `"\`) {
			return // FuzzDecodeToken covers escapes and broken quoting
		}
		data := []byte(`{"turn":0,"m":{"role":"","time":"` + text + `"}}`)
		checkSound(t, "storedMessage", decoders[1].dec, decoders[1].zero, data)
	})
}

// BenchmarkDecodeRecords compares json.Unmarshal with the fast-path decoders,
// per record type and for the history of one turn.
func BenchmarkDecodeRecords(b *testing.B) {
	r := turnRecords()
	cases := []struct {
		name string
		v    any
	}{
		{"SessionMeta", &r.meta}, {"storedMessage", &r.msgs[1]},
		{"InboxItem", &r.inbox}, {"OutboxRecord", &r.out},
	}
	for _, c := range cases {
		data, err := encodeAny(nil, c.v)
		if err != nil {
			b.Fatal(err)
		}
		into := reflect.New(reflect.TypeOf(c.v).Elem()).Interface()
		b.Run(c.name+"/json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				reflect.ValueOf(into).Elem().SetZero()
				if err := json.Unmarshal(data, into); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !decodeAny(data, into) {
					b.Fatal("rejected")
				}
			}
		})
	}
	var msgs [][]byte
	for i := range r.msgs {
		data, err := appendStoredMessage(nil, &r.msgs[i])
		if err != nil {
			b.Fatal(err)
		}
		msgs = append(msgs, data)
	}
	for _, c := range []struct {
		name string
		dec  func([]byte, *storedMessage) error
	}{
		{"History/json", func(d []byte, m *storedMessage) error { *m = storedMessage{}; return json.Unmarshal(d, m) }},
		{"History/fast", func(d []byte, m *storedMessage) error {
			if !decodeStoredMessage(d, m) {
				return fmt.Errorf("rejected %s", d)
			}
			return nil
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var m storedMessage
			for b.Loop() {
				for _, d := range msgs {
					if err := c.dec(d, &m); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
