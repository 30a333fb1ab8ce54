package personas

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse feeds arbitrary files to the front-matter parser: it must never
// panic, every failure must be a *ParseError for the file with a line inside
// the file, and every success must be a valid persona that survives a
// Format → Parse round trip unchanged.
func FuzzParse(f *testing.F) {
	for _, n := range []string{"assistant", "reporter", "buddy"} {
		data, _ := DefaultFile(n)
		f.Add(string(data))
	}
	for _, s := range []string{
		"", "---", "---\n---\n", "---\n---\nbody", "---\ntools: []\n---\nx",
		"---\ntemperature: .nan\n---\nx", "---\nmax_tokens: 99999999999999999999\n---\nx",
		"---\na: &a [*a]\n---\nx", "---\n? [a]\n: b\n---\nx", "---\ntools: [a, [b]]\n---\nx",
		"---\r\nname: p\r\n---\r\nbody\r\n", "\ufeff---\ngreeting: |\n  a\n  b\n---\nx",
		"---\nlanguage: no\nmodel: 1.5\n---\nx", "---\n!!binary name: x\n---\nx",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		p, err := Parse("p.md", []byte(content))
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != "p.md" {
				t.Fatalf("error %v is not a *ParseError for p.md", err)
			}
			if lines := strings.Count(content, "\n") + 1; pe.Line < 0 || pe.Line > lines {
				t.Fatalf("error line %d outside the file (%d lines): %v", pe.Line, lines, err)
			}
			return
		}
		if p.Name != "p" || p.File != "p.md" || p.Identity == "" || !utf8.ValidString(p.Identity) {
			t.Fatalf("bad persona %+v", p)
		}
		if p.Temperature != nil && (*p.Temperature < 0 || *p.Temperature > 2) {
			t.Fatalf("temperature %v accepted", *p.Temperature)
		}
		if p.MaxTokens < 0 {
			t.Fatalf("max_tokens %d accepted", p.MaxTokens)
		}
		data, err := Format(p)
		if err != nil {
			t.Fatalf("Format: %v", err)
		}
		again, err := Parse("p.md", data)
		if err != nil {
			t.Fatalf("Parse(Format(p)): %v\n%s", err, data)
		}
		if !reflect.DeepEqual(again, p) {
			t.Fatalf("round trip changed the persona:\n%#v\n%#v\nfile:\n%s", p, again, data)
		}
	})
}
