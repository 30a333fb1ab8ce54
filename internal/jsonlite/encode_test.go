package jsonlite

import (
	"bytes"
	"encoding/json"
	"testing"
)

// AppendString writes what json.Marshal writes for any string.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `"\<>&`, "\u2028\u2029", "\x00\x1f\x7f", "\xff\xfe", "😀 é", "a\tb\nc\rd\be\ff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s); !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("AppendString(%q) = %s, want x%s", s, got, want)
		}
	})
}
