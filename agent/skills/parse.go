package skills

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Bounds of one skill.
const (
	// MaxFileSize caps a SKILL.md; a larger file is reported and skipped.
	MaxFileSize = 256 << 10
	// MaxDescription caps a description (as the Agent Skills format does).
	MaxDescription = 1024
)

// FileName is the file each skill folder holds.
const FileName = "SKILL.md"

// Skill is one loaded SKILL.md.
type Skill struct {
	Name        string
	Description string
	Body        string // the instructions after the front matter
	File        string // path it was loaded from
}

// ParseError is a problem in one SKILL.md. Line is 1-based; 0 means the
// problem concerns the whole file (its size, its encoding).
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

var (
	nameRe     = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`) // and at most 64 bytes (ValidName)
	yamlLineRe = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
)

// ValidName reports whether name is a valid skill name.
func ValidName(name string) bool { return len(name) <= 64 && nameRe.MatchString(name) }

// Parse parses one SKILL.md. file is its path (the parent folder's name is
// the skill's name) and is used in errors; errors are *ParseError.
func Parse(file string, data []byte) (Skill, error) {
	fail := func(line int, format string, a ...any) (Skill, error) {
		return Skill{}, &ParseError{File: file, Line: line, Msg: fmt.Sprintf(format, a...)}
	}
	folder := filepath.Base(filepath.Dir(file))
	if len(data) > MaxFileSize {
		return fail(0, "file is %d bytes, more than the %d allowed", len(data), MaxFileSize)
	}
	if !utf8.Valid(data) {
		return fail(0, "file is not valid UTF-8")
	}
	text := strings.ReplaceAll(string(bytes.TrimPrefix(data, []byte("\ufeff"))), "\r\n", "\n")
	lines := strings.SplitAfter(text, "\n")
	if strings.TrimRight(lines[0], " \t\n") != "---" {
		return fail(1, `missing front matter: the file must start with a "---" line, then name: and description:, then another "---" line`)
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if strings.TrimRight(lines[i], " \t\n") == "---" {
			end = i
			break
		}
	}
	if end < 0 {
		return fail(1, `front matter is not closed: add a "---" line after the YAML keys`)
	}
	s := Skill{File: file, Body: strings.TrimSpace(strings.Join(lines[end+1:], ""))}
	nameLine, ferr := decodeFront(&s, strings.Join(lines[1:end], ""))
	if ferr != nil {
		return fail(ferr.line+1, "%s", ferr.msg) // +1: the opening "---"
	}
	nameLine++
	switch {
	case s.Name == "":
		return fail(1, "front matter has no name: add name: %s", folderHint(folder))
	case !ValidName(s.Name):
		return fail(nameLine, "name %q must be 1-64 characters of a-z, 0-9, - and _, starting with a letter or digit", truncate(s.Name, 60))
	case s.Name != folder:
		return fail(nameLine, "name %q does not match the folder %q: a skill's name is its folder's name", truncate(s.Name, 60), truncate(folder, 60))
	case s.Description == "":
		return fail(1, "front matter has no description: say in one line what the skill does and when to use it")
	case s.Body == "":
		return fail(end+1, "the instructions after the front matter are empty")
	}
	return s, nil
}

func folderHint(folder string) string {
	if ValidName(folder) {
		return folder
	}
	return "<the folder's name>"
}

type frontError struct {
	line int // 1-based within the front matter
	msg  string
}

// decodeFront reads name and description from the front matter; nameLine
// is the line of name within it.
func decodeFront(s *Skill, front string) (nameLine int, _ *frontError) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(front), &doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLineRe.FindStringSubmatch(err.Error()); m != nil {
			n, _ := strconv.Atoi(m[1])
			if parserProblem(m[2]) {
				n++ // yaml.v3's parser errors (unlike its scanner's) count lines from 0
			}
			return 0, &frontError{line: max(n, 1), msg: "invalid YAML: " + m[2]}
		}
		return 0, &frontError{line: 1, msg: "invalid YAML: " + msg}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return 0, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return 0, &frontError{line: root.Line, msg: "front matter must be YAML keys (name: value)"}
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "name" && k.Value != "description" {
			continue // license, compatibility, metadata, allowed-tools …: not used here
		}
		if v.Kind != yaml.ScalarNode || (v.Tag != "!!str" && v.Tag != "!!null") {
			return 0, &frontError{line: v.Line, msg: k.Value + ": expected text"}
		}
		val := strings.TrimSpace(v.Value)
		if strings.ContainsAny(val, "\n\r") && k.Value == "name" {
			return 0, &frontError{line: v.Line, msg: "name: must be a single line"}
		}
		if k.Value == "name" {
			s.Name, nameLine = val, v.Line
			continue
		}
		val = strings.Join(strings.Fields(val), " ")
		if n := utf8.RuneCountInString(val); n > MaxDescription {
			return 0, &frontError{line: v.Line, msg: fmt.Sprintf("description: %d characters, more than the %d allowed", n, MaxDescription)}
		}
		s.Description = val
	}
	return nameLine, nil
}

// parserProblem reports whether msg is one of yaml.v3's parser (not
// scanner) error messages (parserc.go), whose line numbers are 0-based.
func parserProblem(msg string) bool {
	switch msg {
	case "did not find expected <stream-start>", "did not find expected <document start>",
		"found undefined tag handle", "did not find expected node content",
		"did not find expected '-' indicator", "did not find expected key",
		"did not find expected ',' or ']'", "did not find expected ',' or '}'",
		"found duplicate %YAML directive", "found incompatible YAML document",
		"found duplicate %TAG directive":
		return true
	}
	return false
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
