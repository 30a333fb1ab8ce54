// Package jsonlite owns allocation-light helpers for reading and writing
// JSON by hand on hot paths (streamed model chunks, the model request, stored
// records): skipping whitespace, scanning and unescaping strings, reading
// integers and skipping whole values, and AppendString, which writes a string
// exactly as encoding/json does (encode.go).
//
// Every helper validates what it reads exactly as encoding/json's scanner
// does (control characters and unknown escapes in strings are errors, numbers
// follow the JSON grammar), and Unquote returns what json.Unmarshal into a
// string returns (invalid UTF-8 and lone surrogates become U+FFFD, surrogate
// pairs are joined). A helper reads one token or value at the start of its
// input and reports how many bytes it used; what follows is the caller's to
// check. The only difference from encoding/json is a nesting bound: SkipValue
// gives up on containers nested deeper than MaxDepth, where encoding/json
// allows 10,000. Callers use these helpers for a fast path and fall back to
// encoding/json when a helper reports false, so a refusal costs speed, never
// correctness. jsonlite_test.go fuzzes the agreement with encoding/json.
package jsonlite

import (
	"math"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is how deeply SkipValue lets objects and arrays nest.
const MaxDepth = 64

// IsSpace reports whether c is JSON whitespace (space, tab, newline, carriage
// return).
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipSpace returns the number of JSON whitespace bytes at the start of b.
func SkipSpace(b []byte) int {
	i := 0
	for i < len(b) && IsSpace(b[i]) {
		i++
	}
	return i
}

// ScanString validates the JSON string at the start of b (b[0] must be the
// opening quote) and returns its length n, quotes included. plain reports
// that its contents b[1:n-1] are exactly the unescaped string: no escapes and
// valid UTF-8.
func ScanString(b []byte) (n int, plain, ok bool) {
	n, size, plain := scanString(b)
	return n, plain, size >= 0
}

// Unquote reads the JSON string at the start of b and returns it unescaped as
// json.Unmarshal into a string would, with n the bytes it used (quotes
// included). A non-empty result costs one allocation.
func Unquote(b []byte) (s string, n int, ok bool) {
	n, size, plain := scanString(b)
	switch {
	case size < 0:
		return "", 0, false
	case size == 0:
		return "", n, true
	case plain:
		return string(b[1 : n-1]), n, true
	}
	var sb strings.Builder
	sb.Grow(size)
	in := b[1 : n-1]
	for i := 0; i < len(in); {
		c := in[i]
		switch {
		case c == '\\' && in[i+1] == 'u':
			r, used := escapedRune(in[i:])
			sb.WriteRune(r)
			i += used
		case c == '\\':
			sb.WriteByte(unescapeByte(in[i+1]))
			i += 2
		case c < utf8.RuneSelf:
			sb.WriteByte(c)
			i++
		default:
			r, w := utf8.DecodeRune(in[i:])
			sb.WriteRune(r) // utf8.RuneError for invalid UTF-8, as encoding/json
			i += w
		}
	}
	return sb.String(), n, true
}

// scanString validates the string at the start of b and returns its length
// n, the length of its unescaped form (size, -1 if the string is invalid)
// and whether it is plain (no escapes, valid UTF-8).
func scanString(b []byte) (n, size int, plain bool) {
	if len(b) == 0 || b[0] != '"' {
		return 0, -1, false
	}
	plain = true
	for i := 1; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, size, plain
		case c < ' ':
			return 0, -1, false
		case c == '\\':
			w, used := escapeSize(b[i:])
			if used == 0 {
				return 0, -1, false
			}
			plain = false
			size += w
			i += used
		case c < utf8.RuneSelf:
			size++
			i++
		default:
			r, w := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && w == 1 {
				plain = false
				size += 3 // U+FFFD
			} else {
				size += w
			}
			i += w
		}
	}
	return 0, -1, false // unterminated
}

// escapeSize returns the unescaped size of the escape at the start of b
// (which starts with a backslash) and the bytes it uses: a surrogate pair's
// two \u escapes together. used is 0 if it is not a valid escape.
func escapeSize(b []byte) (size, used int) {
	if len(b) < 2 {
		return 0, 0
	}
	switch b[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 1, 2
	case 'u':
		if getu4(b) < 0 {
			return 0, 0
		}
		r, used := escapedRune(b)
		return utf8.RuneLen(r), used
	}
	return 0, 0
}

// escapedRune decodes the valid \uXXXX escape at the start of b, joined with
// a following \uXXXX when the two are a surrogate pair, as encoding/json
// does: a surrogate that is not half of a pair is U+FFFD and the escape after
// it is read on its own.
func escapedRune(b []byte) (r rune, used int) {
	r = getu4(b)
	if !utf16.IsSurrogate(r) {
		return r, 6
	}
	if dec := utf16.DecodeRune(r, getu4(b[6:])); dec != utf8.RuneError {
		return dec, 12
	}
	return utf8.RuneError, 6
}

// unescapeByte returns the byte a two-byte escape \c stands for.
func unescapeByte(c byte) byte {
	switch c {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return c // '"', '\\', '/'
}

// getu4 decodes \uXXXX at the start of b into its rune, or returns -1.
func getu4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// ScanNumber validates the JSON number at the start of b and returns its
// length: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func ScanNumber(b []byte) (n int, ok bool) {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i += digits(b[i:])
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		d := digits(b[i+1:])
		if d == 0 {
			return 0, false
		}
		i += 1 + d
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := digits(b[i:])
		if d == 0 {
			return 0, false
		}
		i += d
	}
	return i, true
}

// digits returns the number of ASCII digits at the start of b.
func digits(b []byte) int {
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// Int reads the JSON number at the start of b as json.Unmarshal into an
// int64 would: ok is false for a number with a fraction or an exponent (even
// 1.0 or 1e2, which encoding/json refuses too) and for one outside int64.
func Int(b []byte) (v int64, n int, ok bool) {
	n, ok = ScanNumber(b)
	if !ok {
		return 0, 0, false
	}
	neg := b[0] == '-'
	mag := b[:n]
	if neg {
		mag = mag[1:]
	}
	var u uint64
	for _, c := range mag {
		if c < '0' || c > '9' {
			return 0, 0, false // a fraction or an exponent
		}
		d := uint64(c - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0, 0, false
		}
		u = u*10 + d
	}
	switch {
	case neg && u <= 1<<63:
		return int64(-u), n, true // -(1<<63) wraps to math.MinInt64, as wanted
	case !neg && u <= math.MaxInt64:
		return int64(u), n, true
	}
	return 0, 0, false
}

// Null reports whether b starts with the literal null.
func Null(b []byte) bool { return len(b) >= 4 && string(b[:4]) == "null" }

// SkipValue validates the JSON value at the start of b (an object, array,
// string, number, true, false or null, without leading whitespace) and
// returns its length. ok is false for a malformed value and for objects and
// arrays nested deeper than MaxDepth.
func SkipValue(b []byte) (n int, ok bool) { return skipValue(b, 0) }

func skipValue(b []byte, depth int) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	switch c := b[0]; {
	case c == '"':
		n, _, ok := ScanString(b)
		return n, ok
	case c == '{' || c == '[':
		if depth >= MaxDepth {
			return 0, false
		}
		return skipContainer(b, depth+1)
	case c == 't':
		return literal(b, "true")
	case c == 'f':
		return literal(b, "false")
	case c == 'n':
		return literal(b, "null")
	}
	return ScanNumber(b)
}

func literal(b []byte, lit string) (int, bool) {
	if len(b) < len(lit) || string(b[:len(lit)]) != lit {
		return 0, false
	}
	return len(lit), true
}

// skipContainer skips the object or array at the start of b, whose contents
// are at depth.
func skipContainer(b []byte, depth int) (int, bool) {
	object := b[0] == '{'
	end := byte(']')
	if object {
		end = '}'
	}
	i := 1 + SkipSpace(b[1:])
	if i < len(b) && b[i] == end {
		return i + 1, true
	}
	for {
		if object {
			n, _, ok := ScanString(b[i:])
			if !ok {
				return 0, false
			}
			i += n
			i += SkipSpace(b[i:])
			if i >= len(b) || b[i] != ':' {
				return 0, false
			}
			i++
			i += SkipSpace(b[i:])
		}
		n, ok := skipValue(b[i:], depth)
		if !ok {
			return 0, false
		}
		i += n
		i += SkipSpace(b[i:])
		switch {
		case i >= len(b):
			return 0, false
		case b[i] == end:
			return i + 1, true
		case b[i] != ',':
			return 0, false
		}
		i++
		i += SkipSpace(b[i:])
	}
}
