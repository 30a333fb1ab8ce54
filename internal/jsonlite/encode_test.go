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

func TestAppendArray(t *testing.T) {
	item := func(b []byte, s *string) []byte { return AppendString(b, *s) }
	tests := []struct {
		name  string
		items []string
		want  string
	}{
		{"nil: the field is left out", nil, `{"a":1}`},
		{"empty: left out too", []string{}, `{"a":1}`},
		{"one", []string{"x"}, `{"a":1,"k":["x"]}`},
		{"several, escaped", []string{"x", `"y"`, "<z>"}, `{"a":1,"k":["x","\"y\"","\u003cz\u003e"]}`},
	}
	for _, tt := range tests {
		got := append(AppendArray([]byte(`{"a":1`), `,"k":`, tt.items, item), '}')
		if string(got) != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}
