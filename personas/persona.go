package personas

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// MaxFileSize caps a persona file; larger files are reported and skipped.
const MaxFileSize = 256 << 10

// Persona is one loaded persona file.
type Persona struct {
	Name        string
	Description string
	Language    string // "" or "auto" = the user's language
	Model       string // "" = llm.model
	// Fallbacks replace llm.fallbacks for this persona (nil = those; empty
	// non-nil = none): see Fallback.
	Fallbacks   []Fallback
	Temperature *float32 // nil = llm.temperature
	MaxTokens   int      // 0 = llm.max_tokens
	Tools       []string // nil = the global list (agent.tools); empty non-nil = no tools
	Skills      []string // skills the skill tool offers: nil = every skill; empty non-nil = none
	Greeting    string   // style hints for the heartbeat
	Identity    string   // the body: identity and voice
	File        string   // path it was loaded from
}

func cloneF32(f *float32) *float32 {
	if f == nil {
		return nil
	}
	v := *f
	return &v
}

// cloneTools copies tools keeping the nil / empty distinction.
func cloneTools(t []string) []string {
	if t == nil {
		return nil
	}
	return append(make([]string, 0, len(t)), t...)
}

func (p Persona) clone() Persona {
	p.Temperature = cloneF32(p.Temperature)
	p.Tools = cloneTools(p.Tools)
	p.Skills = cloneTools(p.Skills)
	if p.Fallbacks != nil {
		p.Fallbacks = slices.Clone(p.Fallbacks)
	}
	return p
}

// ParseError is a problem in one persona file. Line is 1-based; 0 means the
// problem concerns the whole file (its name, its size).
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

// Names are at most maxNameLen characters of an ASCII class. The length is
// checked apart from the pattern: a counted repetition ({1,64}) compiles to a
// program 64 classes long, ~25 KB of heap each for the process's life.
var (
	nameRe     = regexp.MustCompile(`^[a-z0-9_-]+$`)
	toolNameRe = regexp.MustCompile(`^[a-zA-Z0-9_*?\[\]-]+$`) // globs (github__*) select MCP tools
	// skillNameRe is skills.ValidName's rule.
	skillNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	yamlLineRe  = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
)

const maxNameLen = 64

// ValidName reports whether name is a valid persona name.
func ValidName(name string) bool { return len(name) <= maxNameLen && nameRe.MatchString(name) }

func validToolName(s string) bool { return len(s) <= maxNameLen && toolNameRe.MatchString(s) }

func validSkillName(s string) bool { return len(s) <= maxNameLen && skillNameRe.MatchString(s) }

// NameFromFile returns the persona name a file path implies (its stem).
func NameFromFile(file string) string {
	return strings.TrimSuffix(filepath.Base(file), ".md")
}

// Parse parses one persona file. file is used for the name (its stem) and
// in errors; data is the file's content. Errors are *ParseError.
func Parse(file string, data []byte) (Persona, error) {
	fail := func(line int, format string, a ...any) (Persona, error) {
		return Persona{}, &ParseError{File: file, Line: line, Msg: fmt.Sprintf(format, a...)}
	}
	name := NameFromFile(file)
	if !ValidName(name) {
		return fail(0, "persona name %q (the file name without .md) must be 1-64 characters of a-z, 0-9, _ and -", truncate(name, 60))
	}
	if len(data) > MaxFileSize {
		return fail(0, "file is %d bytes, more than the %d allowed", len(data), MaxFileSize)
	}
	if !utf8.Valid(data) {
		return fail(0, "file is not valid UTF-8")
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	lines := strings.SplitAfter(text, "\n")
	if len(lines) == 0 || strings.TrimRight(lines[0], " \t\n") != "---" {
		return fail(1, `missing front matter: the file must start with a "---" line, then YAML keys, then another "---" line`)
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
	front := strings.Join(lines[1:end], "")
	body := strings.TrimSpace(strings.Join(lines[end+1:], ""))

	p := Persona{Name: name, File: file}
	// Line numbers inside the front matter are offset by the opening "---".
	if err := parseFront(&p, front, frontOffset); err != nil {
		return Persona{}, err
	}
	if body == "" {
		return fail(end+1, "the body after the front matter is empty: write the persona's identity and voice there")
	}
	p.Identity = body
	return p, nil
}

// frontOffset is the number of file lines before the front matter (the "---").
const frontOffset = 1

// frontError is a problem in the front matter at a line relative to it.
type frontError struct {
	line int
	msg  string
}

func (e *frontError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

func parseFront(p *Persona, front string, offset int) error {
	err := decodeFront(p, front)
	if err == nil {
		return nil
	}
	var fe *frontError
	if errors.As(err, &fe) {
		return &ParseError{File: p.File, Line: fe.line + offset, Msg: fe.msg}
	}
	return &ParseError{File: p.File, Line: offset, Msg: err.Error()}
}

func decodeFront(p *Persona, front string) error {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(front), &doc); err != nil {
		msg := err.Error()
		if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
			n, _ := strconv.Atoi(m[1])
			if parserProblems[m[2]] {
				// yaml.v3 reports parser (not scanner) errors with a
				// 0-based line: the line where the construct began.
				n++
			}
			return &frontError{line: n, msg: "invalid YAML: " + m[2]}
		}
		return &frontError{line: 1, msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
	}
	if doc.Kind == 0 { // empty front matter
		return nil
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil
	}
	if root.Kind != yaml.MappingNode {
		return &frontError{line: root.Line, msg: "front matter must be YAML keys (name: value), got " + kindName(root)}
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return &frontError{line: k.Line, msg: "keys must be plain words, got " + kindName(k)}
		}
		if prev, dup := seen[k.Value]; dup {
			return &frontError{line: k.Line, msg: fmt.Sprintf("key %q appears twice (first at line %d)", k.Value, prev+frontOffset)}
		}
		seen[k.Value] = k.Line
		if v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		if err := setField(p, k, v); err != nil {
			return err
		}
	}
	return nil
}

// parserProblems are yaml.v3's parser error messages (parserc.go), whose
// line numbers are 0-based; its scanner errors' are 1-based.
var parserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"found undefined tag handle":             true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
}

var knownKeys = []string{"name", "description", "language", "model", "fallbacks", "temperature", "max_tokens", "tools", "skills", "greeting"}

func setField(p *Persona, k, v *yaml.Node) error {
	bad := func(format string, a ...any) error {
		return &frontError{line: v.Line, msg: k.Value + ": " + fmt.Sprintf(format, a...)}
	}
	null := v.Kind == yaml.ScalarNode && v.Tag == "!!null"
	switch k.Value {
	case "name", "description", "language", "model", "greeting":
		if null {
			return nil
		}
		return setText(p, k.Value, v, bad)
	case "temperature":
		if null {
			return nil
		}
		if v.Kind != yaml.ScalarNode || (v.Tag != "!!float" && v.Tag != "!!int") {
			return bad("expected a number between 0 and 2, got %s", kindName(v))
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(v.Value, "_", ""), 32)
		if err != nil || f < 0 || f > 2 || math.IsNaN(f) {
			return bad("expected a number between 0 and 2, got %s", truncate(v.Value, 40))
		}
		t := float32(f)
		p.Temperature = &t
	case "max_tokens":
		if null {
			return nil
		}
		if v.Kind != yaml.ScalarNode || v.Tag != "!!int" {
			return bad("expected a whole number, got %s", kindName(v))
		}
		var n int
		if err := v.Decode(&n); err != nil || n < 0 {
			return bad("expected a whole number of 0 or more, got %s", truncate(v.Value, 40))
		}
		p.MaxTokens = n
	case "tools":
		if null {
			return nil
		}
		tools, err := parseTools(v, bad)
		if err != nil {
			return err
		}
		p.Tools = tools
	case "fallbacks":
		if null {
			return nil
		}
		fb, err := parseFallbacks(v)
		if err != nil {
			return err
		}
		p.Fallbacks = fb
	case "skills":
		if null {
			return nil
		}
		skills, err := parseNames(v, "skills", "skill", "[release-notes, code-review]", validSkillName)
		if err != nil {
			return err
		}
		p.Skills = skills
	default:
		return &frontError{line: k.Line, msg: fmt.Sprintf("unknown key %q (known keys: %s)", truncate(k.Value, 60), strings.Join(knownKeys, ", "))}
	}
	return nil
}

// setText sets one of the single-value text keys (name, description,
// language, model, greeting) from the scalar v.
func setText(p *Persona, key string, v *yaml.Node, bad func(string, ...any) error) error {
	if v.Kind != yaml.ScalarNode {
		return bad("expected text, got %s", kindName(v))
	}
	s := strings.TrimSpace(v.Value)
	if key != "greeting" && strings.ContainsAny(s, "\n\r") {
		return bad("must be a single line")
	}
	switch key {
	case "name":
		if s != p.Name {
			return bad("%q does not match the file name %q: a persona's name is its file name (rename the file or drop this key)", truncate(s, 60), p.Name+".md")
		}
	case "description":
		p.Description = s
	case "language":
		if len(s) > 40 {
			return bad("at most 40 characters (a language name or code such as English or de)")
		}
		p.Language = s
	case "model":
		p.Model = s
	case "greeting":
		p.Greeting = s
	}
	return nil
}

// parseTools reads the tools list v: tool names, each at most once.
func parseTools(v *yaml.Node, _ func(string, ...any) error) ([]string, error) {
	return parseNames(v, "tools", "tool", "[current_time, web_fetch]", validToolName)
}

// parseNames reads the list v of key: names matching re, each at most once.
func parseNames(v *yaml.Node, key, what, example string, valid func(string) bool) ([]string, error) {
	if v.Kind != yaml.SequenceNode {
		return nil, &frontError{line: v.Line, msg: fmt.Sprintf("%s: expected a list of %s names such as %s, got %s", key, what, example, kindName(v))}
	}
	names := make([]string, 0, len(v.Content))
	for _, it := range v.Content {
		if it.Kind != yaml.ScalarNode || !valid(it.Value) {
			return nil, &frontError{line: it.Line, msg: fmt.Sprintf("%s: %q is not a %s name (%s)", key, truncate(it.Value, 60), what, nameRule[what])}
		}
		if slices.Contains(names, it.Value) {
			return nil, &frontError{line: it.Line, msg: fmt.Sprintf("%s: %q is listed twice", key, it.Value)}
		}
		names = append(names, it.Value)
	}
	return names, nil
}

// nameRule describes the names parseNames accepts.
var nameRule = map[string]string{"tool": "letters, digits, _ and - (or a glob such as github__*)", "skill": "a-z, 0-9, _ and -, starting with a letter or digit"}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "nothing"
		case "!!str":
			return fmt.Sprintf("the text %q", truncate(n.Value, 40))
		}
		return truncate(n.Value, 40)
	}
	return "something else"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Format renders p as a persona file that Parse reads back to the same
// persona (File aside). Empty optional fields are left out; Tools and
// Skills keep the nil (absent) / empty ([]) distinction.
func Format(p Persona) ([]byte, error) {
	m := &yaml.Node{Kind: yaml.MappingNode}
	add := func(key string, v *yaml.Node) {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
	}
	str := func(key, val string) {
		if val != "" {
			add(key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: val})
		}
	}
	str("name", p.Name)
	str("description", p.Description)
	str("language", p.Language)
	str("model", p.Model)
	if n := fallbacksNode(p.Fallbacks); n != nil {
		add("fallbacks", n)
	}
	if p.Temperature != nil {
		add("temperature", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(float64(*p.Temperature), 'g', -1, 32)})
	}
	if p.MaxTokens != 0 {
		add("max_tokens", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(p.MaxTokens)})
	}
	list := func(key string, names []string) {
		if names == nil {
			return
		}
		seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, t := range names {
			seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t})
		}
		add(key, seq)
	}
	list("tools", p.Tools)
	list("skills", p.Skills)
	str("greeting", p.Greeting)
	var buf bytes.Buffer
	buf.WriteString("---\n")
	if len(m.Content) > 0 {
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(m); err != nil {
			return nil, fmt.Errorf("personas: format %s: %w", p.Name, err)
		}
		if err := enc.Close(); err != nil {
			return nil, fmt.Errorf("personas: format %s: %w", p.Name, err)
		}
	}
	buf.WriteString("---\n")
	buf.WriteString(strings.TrimSpace(p.Identity))
	buf.WriteString("\n")
	return buf.Bytes(), nil
}
