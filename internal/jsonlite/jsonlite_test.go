package jsonlite

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// stringSeeds are JSON strings, valid and not, with what follows them.
var stringSeeds = []string{
	`""`, `"plain"`, `"caf\u00e9 \u00E9"`, `"\"\\\/\b\f\n\r\t"`, `"\u003cb\u003e \u0026"`, `"\u2028\u2029"`,
	`"\ud83d\ude00 pair"`, `"\ud83d lone high"`, `"\ude00 lone low"`, `"\ud83d\u0041 high then letter"`,
	`"\ud83d\ud83d\ude00 high high low"`, "\"raw \xff invalid \xed\xa0\x80 surrogate\"", "\"raw \u2028 and 😀\"",
	`"\u0000 nul"`, "\"\x7f del\"", `"\\"`, `"\ufffd"`, `"\'"`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"\t\"",
	`"unterminated`, `"ends in \`, `"a"b`, `"a",1`, `"\ud83d"`, `"\ud83d\"`, `"\ud83d\u"`, "\"\xc3\"", "\"\xf0\x9f\x98\"",
}

// valueSeeds are JSON values, valid and not.
var valueSeeds = []string{
	`0`, `-0`, `1`, `-1`, `01`, `+1`, `1.5`, `1.`, `.5`, `1e2`, `1E+2`, `1e-2`, `1e`, `1e+`, `-`, `-a`, `123abc`,
	`9223372036854775807`, `-9223372036854775808`, `9223372036854775808`, `18446744073709551616`,
	`true`, `tru`, `false`, `null`, `nul`, `nullx`, `{}`, `[]`, `{ }`, `[ ]`, `{"a":1}`, `{"a" : [1, 2, {"b":null}] }`,
	`{"a":1,}`, `[1,]`, `[,1]`, `{"a"}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`, `[1 2]`, `{"a":1}}`, `[[[[]]]]`,
	"[\t1,\n2\r]", `{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}],"usage":null}`,
	strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth),
	strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
}

func TestUnquote(t *testing.T) {
	for _, in := range stringSeeds {
		b := []byte(in)
		s, n, ok := Unquote(b)
		dec := json.NewDecoder(bytes.NewReader(b))
		var want string
		wantOK := dec.Decode(&want) == nil
		if ok != wantOK {
			t.Errorf("Unquote(%q) ok = %v, encoding/json decodes: %v", in, ok, wantOK)
			continue
		}
		if ok && (s != want || n != int(dec.InputOffset())) {
			t.Errorf("Unquote(%q) = %q, %d; want %q, %d", in, s, n, want, dec.InputOffset())
		}
	}
}

func TestSkipValue(t *testing.T) {
	for _, in := range append(valueSeeds, stringSeeds...) {
		b := []byte(in)
		n, ok := SkipValue(b)
		deep := strings.HasPrefix(in, strings.Repeat("[", MaxDepth+1))
		whole := ok && n+SkipSpace(b[n:]) == len(b)
		if want := json.Valid(b) && !deep; whole != want {
			t.Errorf("SkipValue(%q) = %d, %v; json.Valid = %v", in, n, ok, json.Valid(b))
		}
		if ok && !json.Valid(b[:n]) {
			t.Errorf("SkipValue(%q) took %q, not a valid value", in, b[:n])
		}
	}
}

func TestInt(t *testing.T) {
	for _, in := range valueSeeds {
		b := []byte(in)
		v, n, ok := Int(b)
		var want int64
		err := json.Unmarshal(b[:max(n, 1)], &want)
		if ok && (err != nil || v != want) {
			t.Errorf("Int(%q) = %d, %d; json.Unmarshal: %d, %v", in, v, n, want, err)
		}
		if !ok && !Null(b) && json.Unmarshal(b, &want) == nil { // null is the caller's to read
			t.Errorf("Int(%q) refused what json.Unmarshal reads as %d", in, want)
		}
	}
}

func TestUnquoteAllocations(t *testing.T) {
	for _, in := range []string{`"plain text"`, `"caf\u00e9 \ud83d\ude00 \n"`, "\"raw \xff\xfe invalid\""} {
		b := []byte(in)
		if a := testing.AllocsPerRun(100, func() { _, _, _ = Unquote(b) }); a != 1 {
			t.Errorf("Unquote(%q): %v allocations, want 1", in, a)
		}
	}
	if a := testing.AllocsPerRun(100, func() { _, _ = SkipValue([]byte(valueSeeds[len(valueSeeds)-3])) }); a != 0 {
		t.Errorf("SkipValue: %v allocations", a)
	}
}

// FuzzUnquote: whenever Unquote accepts, json.Unmarshal of the same bytes
// gives the same string; whenever the input is exactly a valid JSON string,
// Unquote accepts all of it.
//
//	go test ./internal/jsonlite/ -run '^$' -fuzz FuzzUnquote -fuzztime 20s -parallel 1
func FuzzUnquote(f *testing.F) {
	for _, s := range stringSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, n, ok := Unquote(b)
		if ok {
			var want string
			if err := json.Unmarshal(b[:n], &want); err != nil || want != s {
				t.Fatalf("Unquote(%q) = %q, %d; json.Unmarshal: %q, %v", b, s, n, want, err)
			}
			if n < 2 || b[n-1] != '"' {
				t.Fatalf("Unquote(%q) used %d bytes", b, n)
			}
		}
		if len(b) > 0 && b[0] == '"' && json.Valid(b) && (!ok || n+SkipSpace(b[n:]) != len(b)) {
			t.Fatalf("Unquote(%q) = %v, %d; a valid string of %d bytes", b, ok, n, len(b))
		}
	})
}

// FuzzSkipValue: whenever SkipValue accepts, the bytes it took are a valid
// JSON value; whenever the input is exactly one valid value (nested no deeper
// than MaxDepth), SkipValue takes all of it.
//
//	go test ./internal/jsonlite/ -run '^$' -fuzz FuzzSkipValue -fuzztime 20s -parallel 1
func FuzzSkipValue(f *testing.F) {
	for _, s := range append(valueSeeds, stringSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok := SkipValue(b)
		if ok && (n <= 0 || n > len(b) || !json.Valid(b[:n])) {
			t.Fatalf("SkipValue(%q) took %d bytes, not a valid value", b, n)
		}
		if len(b) == 0 || IsSpace(b[0]) || !json.Valid(b) || bytes.Count(b, []byte("["))+bytes.Count(b, []byte("{")) > MaxDepth {
			return
		}
		if !ok || n+SkipSpace(b[n:]) != len(b) {
			t.Fatalf("SkipValue(%q) = %d, %v; the whole input is one valid value", b, n, ok)
		}
	})
}
