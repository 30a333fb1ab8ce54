package channels

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// AppendJSON writes what json.Marshal writes, for every field set or empty
// and strings json escapes (HTML, control bytes, U+2028, invalid UTF-8).
func TestAppendJSONIsJSONMarshal(t *testing.T) {
	berlin := time.FixedZone("CEST", 2*3600)
	odd := []string{"", "plain", `quote " and \ back`, "<b>&amp;</b>", "line\nfeed\ttab\r\x00\x1f\x7f",
		"emoji 🦊 und Umlaute äöü", "sep\u2028\u2029", "bad \xff\xfe utf-8", strings.Repeat("x", 5000)}
	pick := func(r *rand.Rand) string { return odd[r.IntN(len(odd))] }
	r := rand.New(rand.NewPCG(1, 2))
	msgs := []Message{
		{},
		{Channel: "telegram", ChatID: "42", MessageID: "7", Sender: Sender{ID: "9"}, Text: "hi", Time: time.Unix(1700000000, 0).UTC()},
		{Channel: "discord", ChatID: "c", ThreadID: "t", MessageID: "m", Sender: Sender{ID: "u", Name: "Ann", IsBot: true},
			Text: "x", Media: []Media{{MIME: "image/png", Name: "a.png", Data: []byte{0, 1, 2, 250}}, {MIME: "text/plain"}, {MIME: "x", Data: []byte{}}},
			Direct: true, Mentioned: true, ReplyTo: "r", Quote: &Quote{Author: "Bob", Text: "q", FromBot: true}, FromSelf: true,
			Time: time.Date(2026, 11, 25, 2, 3, 4, 500, berlin), ParentID: "p"},
		{Quote: &Quote{}, Media: []Media{}, Time: time.Now()}, // monotonic reading, empty slice, empty quote
	}
	for range 300 {
		m := Message{Channel: pick(r), ChatID: pick(r), ThreadID: pick(r), MessageID: pick(r),
			Sender: Sender{ID: pick(r), Name: pick(r), IsBot: r.IntN(2) == 0}, Text: pick(r),
			Direct: r.IntN(2) == 0, Mentioned: r.IntN(2) == 0, ReplyTo: pick(r), FromSelf: r.IntN(2) == 0,
			Time: time.Unix(r.Int64N(1<<34), r.Int64N(1e9)).In(time.FixedZone("z", (r.IntN(48)-24)*1800)), ParentID: pick(r)}
		for range r.IntN(3) {
			m.Media = append(m.Media, Media{MIME: pick(r), Name: pick(r), Data: []byte(pick(r))})
		}
		if r.IntN(2) == 0 {
			m.Quote = &Quote{Author: pick(r), Text: pick(r), FromBot: r.IntN(2) == 0}
		}
		msgs = append(msgs, m)
	}
	for i, m := range msgs {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("message %d: json.Marshal: %v", i, err)
		}
		got, err := m.AppendJSON([]byte("prefix"))
		if err != nil {
			t.Fatalf("message %d: AppendJSON: %v", i, err)
		}
		if !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Fatalf("message %d:\n got %s\nwant prefix%s", i, got, want)
		}
	}
}

// A time json.Marshal cannot write is an error, not a record that does not
// decode; dst comes back as it was.
func TestAppendJSONRefusesWhatJSONMarshalRefuses(t *testing.T) {
	tests := []struct {
		name string
		at   time.Time
	}{
		{"year 10000", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"year -1", time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"offset of 24 hours", time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 24*3600))},
	}
	for _, tt := range tests {
		m := Message{Channel: "telegram", Time: tt.at}
		if _, err := json.Marshal(m); err == nil {
			t.Fatalf("%s: json.Marshal accepted it; the test's premise is wrong", tt.name)
		}
		got, err := m.AppendJSON([]byte("keep"))
		if err == nil || string(got) != "keep" {
			t.Errorf("%s: AppendJSON = %q, %v; want an error and dst unchanged", tt.name, got, err)
		}
	}
}

// AppendJSON writes what json.Marshal writes for any message the fuzzer
// builds (go test -fuzz FuzzAppendJSON ./channels/; plain go test runs the
// seeds only).
func FuzzAppendJSON(f *testing.F) {
	f.Add("telegram", "42", "", "7", "9", "", "hi", "", "", "", "", []byte(nil), int64(1700000000), int64(0), 0, uint8(0))
	f.Add("d\u2028", "<c>", "t&", "\xff", "\x00", "N\"", "a\\b\x7f", "\xed\xa0\x80", "q", "r", "p", []byte{0, 250}, int64(-62135596800), int64(999999999), -86399, uint8(255))
	f.Add("", "", "", "", "", "", "", "", "", "", "", []byte{}, int64(253402300799), int64(1), 3601, uint8(0b10101010))
	f.Fuzz(func(t *testing.T, channel, chat, thread, id, sender, name, text, mime, quote, reply, parent string,
		data []byte, sec, nsec int64, offset int, flags uint8) {
		zone := time.UTC
		if offset != 0 {
			zone = time.FixedZone("z", offset)
		}
		m := Message{Channel: channel, ChatID: chat, ThreadID: thread, MessageID: id,
			Sender: Sender{ID: sender, Name: name, IsBot: flags&1 != 0}, Text: text,
			Direct: flags&2 != 0, Mentioned: flags&4 != 0, ReplyTo: reply, FromSelf: flags&8 != 0,
			Time: time.Unix(sec, nsec).In(zone), ParentID: parent}
		if flags&16 != 0 {
			m.Quote = &Quote{Author: name, Text: quote, FromBot: flags&32 != 0}
		}
		switch flags >> 6 {
		case 1:
			m.Media = []Media{}
		case 2:
			m.Media = []Media{{MIME: mime, Name: name, Data: data}}
		case 3:
			m.Media = []Media{{MIME: mime, Data: data}, {Name: quote}}
		}
		want, wantErr := json.Marshal(m)
		got, err := m.AppendJSON([]byte("prefix"))
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("AppendJSON error %v, json.Marshal error %v, for %#v", err, wantErr, m)
		}
		if err != nil {
			if string(got) != "prefix" {
				t.Fatalf("AppendJSON failed (%v) but changed dst: %q", err, got)
			}
			return
		}
		if !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Fatalf("for %#v:\n got %s\nwant prefix%s", m, got, want)
		}
	})
}

// TestAppendJSONWritesEveryField guards against a field added to Message
// (or to Sender, Quote, Media) but not to AppendJSON: replay would lose it
// without a word. Every field, nested ones too, gets a value json.Marshal
// writes, and the bytes must be json.Marshal's.
func TestAppendJSONWritesEveryField(t *testing.T) {
	var m Message
	n := fill(t, reflect.ValueOf(&m).Elem(), "Message")
	if n < 20 || m.Quote == nil || len(m.Media) != 1 || m.Media[0].Data == nil {
		t.Fatalf("filled %d fields: %+v", n, m)
	}
	want, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.AppendJSON(nil)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("AppendJSON = %s, %v\njson.Marshal = %s", got, err, want)
	}
}

// fill sets every field under v to a value of its own and returns how many
// it set; a kind it does not know fails the test (teach it, and AppendJSON).
func fill(t *testing.T, v reflect.Value, name string) int {
	t.Helper()
	switch {
	case v.Type() == reflect.TypeOf(time.Time{}):
		v.Set(reflect.ValueOf(time.Date(2026, 11, 25, 4, 5, 6, 7, time.FixedZone("x", -9000))))
		return 1
	case v.Kind() == reflect.Struct:
		n := 0
		for i := range v.NumField() {
			n += fill(t, v.Field(i), name+"."+v.Type().Field(i).Name)
		}
		return n
	case v.Kind() == reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		return fill(t, v.Elem(), name)
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		v.SetBytes([]byte("bytes of " + name))
		return 1
	case v.Kind() == reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		return fill(t, v.Index(0), name+"[0]")
	case v.Kind() == reflect.String:
		v.SetString("value of " + name)
	case v.Kind() == reflect.Bool:
		v.SetBool(true)
	case v.CanInt():
		v.SetInt(42)
	default:
		t.Fatalf("%s is a %s: teach fill (and AppendJSON) about it", name, v.Kind())
	}
	return 1
}
