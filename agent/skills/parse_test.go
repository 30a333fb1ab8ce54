package skills

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	file := filepath.Join("skills", "release-notes", "SKILL.md")
	s, err := Parse(file, []byte("\ufeff---\r\nname: release-notes\r\ndescription: >\r\n  Write release notes\r\n  from a change list.\r\nlicense: MIT\r\nmetadata:\r\n  author: ops\r\n---\r\n# Release notes\r\n\r\n1. Group by area.\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "release-notes" || s.Description != "Write release notes from a change list." || s.Body != "# Release notes\n\n1. Group by area." || s.File != file {
		t.Fatalf("%+v", s)
	}
}

// Issue 16: a malformed SKILL.md is reported with file:line.
func TestParseErrors(t *testing.T) {
	file := filepath.Join("skills", "greet", "SKILL.md")
	for _, tt := range []struct {
		name, data, want string
	}{
		{"no front matter", "# Greet\n", "skills/greet/SKILL.md:1: missing front matter"},
		{"not closed", "---\nname: greet\n", "SKILL.md:1: front matter is not closed"},
		{"yaml", "---\nname: greet\ndescription: [unclosed\n---\nbody\n", "SKILL.md:3: invalid YAML"},
		{"tab", "---\nname: greet\n\tdescription: x\n---\nbody\n", "SKILL.md:3: invalid YAML: found a tab"},
		{"no name", "---\ndescription: Say hello.\n---\nbody\n", "SKILL.md:1: front matter has no name: add name: greet"},
		{"bad name", "---\ndescription: Say hello.\nname: Greet Me\n---\nbody\n", `SKILL.md:3: name "Greet Me" must be 1-64 characters`},
		{"other folder", "---\nname: wave\ndescription: Say hello.\n---\nbody\n", `SKILL.md:2: name "wave" does not match the folder "greet"`},
		{"no description", "---\nname: greet\n---\nbody\n", "SKILL.md:1: front matter has no description"},
		{"description list", "---\nname: greet\ndescription:\n  - a\n---\nbody\n", "SKILL.md:4: description: expected text"},
		{"long description", "---\nname: greet\ndescription: " + strings.Repeat("x", 1025) + "\n---\nbody\n", "SKILL.md:3: description: 1025 characters, more than the 1024 allowed"},
		{"empty body", "---\nname: greet\ndescription: Say hello.\n---\n\n", "SKILL.md:4: the instructions after the front matter are empty"},
		{"not mapping", "---\n- a\n---\nbody\n", "SKILL.md:2: front matter must be YAML keys"},
		{"binary", "---\xff\n", "SKILL.md: file is not valid UTF-8"},
		{"too big", "---\nname: greet\ndescription: x\n---\n" + strings.Repeat("x", MaxFileSize), "SKILL.md: file is 262179 bytes, more than the 262144 allowed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(file, []byte(tt.data))
			var pe *ParseError
			if !errors.As(err, &pe) || !strings.Contains(filepath.ToSlash(err.Error()), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// Skill names are at most 64 characters; the pattern no longer counts.
func TestValidNameLength(t *testing.T) {
	for n, want := range map[int]bool{1: true, 64: true, 65: false} {
		if got := ValidName(strings.Repeat("a", n)); got != want {
			t.Errorf("ValidName(%d chars) = %v, want %v", n, got, want)
		}
	}
}
