package personas

import (
	"reflect"
	"strings"
	"testing"
)

// A persona's fallbacks: model names or {base_url, model}; keys never
// belong in the file; problems name the line.
func TestParseFallbacks(t *testing.T) {
	for _, tt := range []struct {
		name  string
		front string
		want  []Fallback
		err   string
	}{
		{"absent", "model: m", nil, ""},
		{"empty = none", "fallbacks: []", []Fallback{}, ""},
		{"models and endpoints", "fallbacks:\n  - gpt-4o-mini\n  - {base_url: \"http://127.0.0.1:11434/v1\", model: llama3.1}",
			[]Fallback{{Model: "gpt-4o-mini"}, {BaseURL: "http://127.0.0.1:11434/v1", Model: "llama3.1"}}, ""},
		{"a key", "fallbacks:\n  - {base_url: \"http://x/v1\", api_key: sk-1}", nil, "poet.md:3: fallbacks: api_key does not belong in a persona file"},
		{"not a list", "fallbacks: gpt-4o", nil, "poet.md:2: fallbacks: expected a list"},
		{"bad url", "fallbacks:\n  - {base_url: \"ftp://x\"}", nil, "poet.md:3: fallbacks: base_url \"ftp://x\" is not an http(s) URL"},
		{"credentials in url", "fallbacks:\n  - {base_url: \"http://u:p@x/v1\", model: m}", nil, "must not carry credentials"},
		{"twice", "fallbacks: [a, a]", nil, "poet.md:2: fallbacks: \"a\" is listed twice"},
		{"unknown key", "fallbacks:\n  - {modle: a}", nil, "unknown key \"modle\""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse("poet.md", []byte("---\n"+tt.front+"\n---\nYou are a poet.\n"))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p.Fallbacks, tt.want) {
				t.Fatalf("fallbacks %#v, want %#v", p.Fallbacks, tt.want)
			}
			out, err := Format(p)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse("poet.md", out)
			if err != nil || !reflect.DeepEqual(back.Fallbacks, tt.want) {
				t.Fatalf("round trip %#v (%v) from\n%s", back.Fallbacks, err, out)
			}
		})
	}
}
