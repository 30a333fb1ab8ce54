package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// SetInFile sets the dotted key in the YAML file at path to value and
// writes the file back, keeping comments, key order and (where the edit can
// be made textually) every other byte. value is read as a YAML scalar or
// flow collection ("42", "true", "5m", "[a, b]", "{name: x, …}"); for
// string keys a value that is not itself a quoted YAML scalar is taken
// literally. The edited file must load (Parse with the process environment)
// or nothing is written. The write is atomic and keeps the file's mode; a
// missing file is created (mode 0600).
func SetInFile(path, key, value string) error {
	return editFile(path, key, os.LookupEnv, false, func(e *editor) error { return e.set(value) })
}

// UnsetInFile removes the dotted key from the file at path, so it falls back
// to its default, with the same guarantees as SetInFile. Removing a key that
// is not in the file is not an error and leaves the file untouched. A job is
// removed with "jobs.<name>" (or "jobs.<index>").
func UnsetInFile(path, key string) error {
	return editFile(path, key, os.LookupEnv, true, (*editor).unset)
}

// rawKeyInFile reports whether the dotted mapping path key exists in data.
func rawKeyInFile(data []byte, key string) bool {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return false
	}
	n := doc.Content[0]
	for _, p := range strings.Split(key, ".") {
		if n.Kind != yaml.MappingNode {
			return false
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == p {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return false
		}
		n = next
	}
	return true
}

// errNoChange means the edit left the document as it was.
var errNoChange = errors.New("no change")

// editFile runs op on the file. removing allows a key unknown to the schema
// when it is present in the file (so `config unset llm.modle` fixes a typo).
func editFile(path, key string, env EnvFunc, removing bool, op func(*editor) error) error {
	real := path
	if p, err := filepath.EvalSymlinks(path); err == nil {
		real = p
	}
	mode := fs.FileMode(0o600)
	data, err := os.ReadFile(real)
	switch {
	case err == nil:
		if st, serr := os.Stat(real); serr == nil {
			mode = st.Mode().Perm()
		}
	case errors.Is(err, fs.ErrNotExist):
		data = nil
	default:
		return fmt.Errorf("config: read %s: %w", path, err)
	}
	segs, leaf, err := schemaPath(key)
	if err != nil {
		// An unknown key can still be removed when it is in the file (the
		// way to fix a typo from the CLI); otherwise report the schema error.
		if !removing || !rawKeyInFile(data, key) {
			return fmt.Errorf("config: %s: %w", key, err)
		}
		segs, leaf = nil, reflect.TypeFor[string]()
		for _, p := range strings.Split(key, ".") {
			segs = append(segs, seg{kind: segField, name: p})
		}
	}
	e, err := newEditor(displayName(path), data, segs, leaf, key)
	if err != nil {
		return err
	}
	if err := op(e); err != nil {
		if errors.Is(err, errNoChange) {
			return nil
		}
		return fmt.Errorf("config: %s: %w", key, err)
	}
	out, err := e.result()
	if err != nil {
		return fmt.Errorf("config: %s: %w", key, err)
	}
	if _, err := Parse(path, out, env); err != nil {
		return fmt.Errorf("config: refusing to change %s (the file is unchanged): %w", key, err)
	}
	if err := writeAtomic(real, out, mode); err != nil {
		return fmt.Errorf("config: write %s: %w", path, err)
	}
	return nil
}

// writeAtomic replaces path with data: temp file in the same directory,
// fsync, chmod to mode, rename, fsync of the directory.
func writeAtomic(path string, data []byte, mode fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// editor applies one edit to a document, both to the node tree (the
// intended result) and, where it can, to the text (the preferred result).
type editor struct {
	file string
	src  []byte
	doc  *yaml.Node // document node; mutated by the edit
	segs []seg
	leaf reflect.Type
	key  string

	// text is the textually edited file, nil when no textual edit applies.
	text []byte
	// lineStart[i] is the byte offset of line i+1.
	lineStart []int
}

func newEditor(file string, data []byte, segs []seg, leaf reflect.Type, key string) (*editor, error) {
	e := &editor{file: file, src: data, segs: segs, leaf: leaf, key: key}
	var doc yaml.Node
	root, err := parseYAML(file, data)
	if err != nil {
		return nil, err
	}
	if root != nil {
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, yamlError(file, data, err)
		}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || isNull(doc.Content[0]) {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	e.doc = &doc
	e.lineStart = []int{0}
	for i, b := range data {
		if b == '\n' {
			e.lineStart = append(e.lineStart, i+1)
		}
	}
	return e, nil
}

// result returns the edited file: the textual edit if it parses to exactly
// the intended tree, otherwise the re-encoded tree.
func (e *editor) result() ([]byte, error) {
	if e.text != nil {
		var got yaml.Node
		if err := yaml.Unmarshal(e.text, &got); err == nil && sameTree(&got, e.doc) {
			return e.text, nil
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(e.doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// sameTree compares two trees by meaning: kinds, resolved tags, values and
// order; comments, styles and positions are ignored.
func sameTree(a, b *yaml.Node) bool {
	return sameNode(a, b, 0)
}

func sameNode(a, b *yaml.Node, depth int) bool {
	if depth > 100 {
		return false
	}
	if a == nil || b == nil {
		return a == b
	}
	if a.Kind == yaml.AliasNode || b.Kind == yaml.AliasNode {
		// Compared by anchor name, never expanded (aliases may recurse).
		return a.Kind == b.Kind && a.Value == b.Value
	}
	if a.Anchor != b.Anchor {
		return false
	}
	if a.Kind == yaml.DocumentNode && b.Kind == yaml.DocumentNode {
		if len(a.Content) == 0 || len(b.Content) == 0 {
			return len(a.Content) == len(b.Content)
		}
		return sameNode(a.Content[0], b.Content[0], depth+1)
	}
	if a.Kind != b.Kind {
		return false
	}
	if a.Kind == yaml.ScalarNode {
		return a.Value == b.Value && a.ShortTag() == b.ShortTag()
	}
	if len(a.Content) != len(b.Content) {
		return false
	}
	for i := range a.Content {
		if !sameNode(a.Content[i], b.Content[i], depth+1) {
			return false
		}
	}
	return true
}

// step is one resolved segment: the container node and, when found, the
// index of the key (mapping) or item (sequence) in its Content.
type step struct {
	container *yaml.Node
	keyIdx    int // mapping: index of the key node; sequence: item index; -1 if absent
}

// locate walks the path as far as it exists. It returns the steps found
// and the node at the deepest existing point.
func (e *editor) locate() (steps []step, node *yaml.Node, err error) {
	node = e.doc.Content[0]
	for _, s := range e.segs {
		if node.Kind == yaml.AliasNode || node.Anchor != "" {
			return nil, nil, fmt.Errorf("cannot edit through a YAML anchor or alias; edit the file by hand")
		}
		switch s.kind {
		case segField, segMapKey:
			if node.Kind != yaml.MappingNode {
				return steps, node, nil
			}
			idx := -1
			for i := 0; i+1 < len(node.Content); i += 2 {
				if node.Content[i].Value == s.name {
					idx = i
				}
			}
			steps = append(steps, step{container: node, keyIdx: idx})
			if idx < 0 {
				return steps, nil, nil
			}
			node = node.Content[idx+1]
		case segItem:
			if node.Kind != yaml.SequenceNode {
				return steps, node, nil
			}
			idx := -1
			if i, err := strconv.Atoi(s.name); err == nil {
				if i >= 0 && i < len(node.Content) {
					idx = i
				} else if i != len(node.Content) {
					return nil, nil, fmt.Errorf("no item %d (the list has %d)", i, len(node.Content))
				}
			} else {
				for i, it := range node.Content {
					if it.Kind == yaml.MappingNode && mappingValue(it, "name") == s.name {
						idx = i
					}
				}
			}
			steps = append(steps, step{container: node, keyIdx: idx})
			if idx < 0 {
				return steps, nil, nil
			}
			node = node.Content[idx]
		}
	}
	return steps, node, nil
}

func mappingValue(m *yaml.Node, key string) string {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1].Value
		}
	}
	return ""
}

// valueNode turns the command-line value into a node for the leaf type.
func (e *editor) valueNode(value string) (*yaml.Node, error) {
	stringLike := e.leaf.Kind() == reflect.String || e.leaf == secretType
	var doc yaml.Node
	perr := yaml.Unmarshal([]byte(value), &doc)
	var n *yaml.Node
	if perr == nil && doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		n = doc.Content[0]
		n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	}
	if stringLike {
		trimmed := strings.TrimSpace(value)
		quoted := strings.HasPrefix(trimmed, `"`) || strings.HasPrefix(trimmed, `'`)
		if quoted && n != nil && n.Kind == yaml.ScalarNode {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: n.Value}, nil
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}, nil
	}
	if perr != nil {
		return nil, fmt.Errorf("value %q is not valid YAML: %v", truncate(value, 60), strings.TrimPrefix(perr.Error(), "yaml: "))
	}
	if n == nil || isNull(n) {
		return nil, fmt.Errorf("empty value: use `config unset %s` to restore the default", e.key)
	}
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return nil, fmt.Errorf("anchors and aliases are not allowed in a value")
	}
	return n, nil
}

func flowify(n *yaml.Node) {
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		n.Style = yaml.FlowStyle
	}
	for _, c := range n.Content {
		flowify(c)
	}
}

// inline renders a node on one line (flow style), or "" when it cannot.
func inline(n *yaml.Node) string {
	c := *n
	c.HeadComment, c.LineComment, c.FootComment = "", "", ""
	flowify(&c)
	out, err := yaml.Marshal(&c)
	if err != nil {
		return ""
	}
	s := strings.TrimSuffix(string(out), "\n")
	if strings.ContainsAny(s, "\n\r") || s == "" {
		return ""
	}
	return s
}

func (e *editor) set(value string) error {
	nv, err := e.valueNode(value)
	if err != nil {
		return err
	}
	steps, node, err := e.locate()
	if err != nil {
		return err
	}
	// A named job that does not exist yet is appended with its name.
	last := e.segs[len(e.segs)-1]
	if last.kind == segItem && len(steps) == len(e.segs) && steps[len(steps)-1].keyIdx < 0 {
		if _, err := strconv.Atoi(last.name); err != nil {
			if nv.Kind != yaml.MappingNode {
				return fmt.Errorf("no job named %q; to add one set a whole job: '{schedule: \"0 9 * * *\", kind: task, prompt: ..., deliver_to: [target]}'", truncate(last.name, 60))
			}
			if mappingValue(nv, "name") == "" {
				nv.Content = append([]*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: "name"}, {Kind: yaml.ScalarNode, Tag: "!!str", Value: last.name}}, nv.Content...)
			}
		}
	}

	if node != nil && len(steps) == len(e.segs) {
		// The key exists: replace its value.
		st := steps[len(steps)-1]
		var old *yaml.Node
		if st.container.Kind == yaml.MappingNode {
			old = st.container.Content[st.keyIdx+1]
		} else {
			old = st.container.Content[st.keyIdx]
		}
		if sameTree(old, nv) {
			return errNoChange
		}
		if old.Kind == yaml.ScalarNode && nv.Kind == yaml.ScalarNode && nv.ShortTag() == "!!str" &&
			old.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 && !strings.ContainsAny(nv.Value, "\n\r") {
			nv.Style = old.Style & (yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle) // keep the operator's quoting
		}
		e.replaceText(old, st.container.Style&yaml.FlowStyle != 0, nv)
		nv.LineComment, nv.HeadComment, nv.FootComment = old.LineComment, old.HeadComment, old.FootComment
		if st.container.Style&yaml.FlowStyle != 0 {
			flowify(nv)
		}
		if st.container.Kind == yaml.MappingNode {
			st.container.Content[st.keyIdx+1] = nv
		} else {
			st.container.Content[st.keyIdx] = nv
		}
		return nil
	}

	// A list item that does not exist can only be added whole.
	if miss := len(steps) - 1; miss >= 0 && miss < len(e.segs)-1 && steps[miss].keyIdx < 0 && e.segs[miss].kind == segItem {
		if _, err := strconv.Atoi(e.segs[miss].name); err == nil {
			return fmt.Errorf("no item %s (the list has %d)", e.segs[miss].name, len(steps[miss].container.Content))
		}
		return fmt.Errorf("no job named %q; to add one set a whole job: '{schedule: \"0 9 * * *\", kind: task, prompt: ..., deliver_to: [target]}'", truncate(e.segs[miss].name, 60))
	}

	// The path exists up to the deepest step; build the rest.
	parent := e.doc.Content[0]
	rest := e.segs
	if len(steps) > 0 {
		parent = steps[len(steps)-1].container
		rest = e.segs[len(steps)-1:]
	}
	if node != nil {
		// The walk stopped at a node of the wrong kind (null or scalar):
		// replace it with the structure the path needs.
		return e.replaceWrongKind(steps, rest, nv)
	}
	sub := buildPath(rest[1:], nv)
	first := rest[0]
	if parent.Kind == yaml.MappingNode {
		e.insertText(parent, first.name, sub)
		k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: first.name}
		if parent.Style&yaml.FlowStyle != 0 {
			flowify(sub)
		}
		parent.Content = append(parent.Content, k, sub)
		return nil
	}
	// Appending to a sequence.
	e.appendItemText(parent, sub)
	if parent.Style&yaml.FlowStyle != 0 {
		flowify(sub)
	}
	parent.Content = append(parent.Content, sub)
	return nil
}

// replaceWrongKind replaces a null/scalar node found where the path needs a
// mapping or list.
func (e *editor) replaceWrongKind(steps []step, rest []seg, nv *yaml.Node) error {
	if len(steps) == 0 {
		return fmt.Errorf("the file's top level is not a mapping")
	}
	st := steps[len(steps)-1]
	built := buildPath(rest[1:], nv)
	var old *yaml.Node
	if st.container.Kind == yaml.MappingNode {
		old = st.container.Content[st.keyIdx+1]
	} else {
		old = st.container.Content[st.keyIdx]
	}
	if !isNull(old) {
		return fmt.Errorf("%s holds a single value, not a section", e.key)
	}
	built.LineComment = old.LineComment
	if st.container.Kind == yaml.MappingNode {
		st.container.Content[st.keyIdx+1] = built
	} else {
		st.container.Content[st.keyIdx] = built
	}
	return nil
}

// buildPath nests v under the remaining segments.
func buildPath(rest []seg, v *yaml.Node) *yaml.Node {
	if len(rest) == 0 {
		return v
	}
	s := rest[0]
	inner := buildPath(rest[1:], v)
	if s.kind == segItem {
		if _, err := strconv.Atoi(s.name); err != nil && inner.Kind == yaml.MappingNode && mappingValue(inner, "name") == "" {
			inner.Content = append([]*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: "name"}, {Kind: yaml.ScalarNode, Tag: "!!str", Value: s.name}}, inner.Content...)
		}
		return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{inner}}
	}
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: s.name}, inner}}
}

func (e *editor) unset() error {
	steps, node, err := e.locate()
	if err != nil {
		return err
	}
	if node == nil || len(steps) != len(e.segs) {
		return errNoChange
	}
	st := steps[len(steps)-1]
	c := st.container
	if c.Kind == yaml.MappingNode {
		e.removeText(c, c.Content[st.keyIdx], c.Content[st.keyIdx+1])
		c.Content = append(c.Content[:st.keyIdx:st.keyIdx], c.Content[st.keyIdx+2:]...)
	} else {
		e.removeText(c, nil, c.Content[st.keyIdx])
		c.Content = append(c.Content[:st.keyIdx:st.keyIdx], c.Content[st.keyIdx+1:]...)
	}
	return nil
}

// ---- textual edits (best effort; result() verifies them) ----

// offset converts a node's 1-based line and (character) column to a byte
// offset, or -1.
func (e *editor) offset(line, col int) int {
	if line < 1 || line > len(e.lineStart) || col < 1 {
		return -1
	}
	off := e.lineStart[line-1]
	for c := 1; c < col; c++ {
		if off >= len(e.src) || e.src[off] == '\n' {
			return -1
		}
		_, w := utf8.DecodeRune(e.src[off:])
		off += w
	}
	return off
}

// nodeEnd returns the byte offset just past n's text, or -1 when unknown.
func (e *editor) nodeEnd(n *yaml.Node, inFlow bool) int {
	start := e.offset(n.Line, n.Column)
	if start < 0 {
		return -1
	}
	switch n.Kind {
	case yaml.ScalarNode, yaml.AliasNode:
		if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			return -1
		}
		return scalarEnd(e.src, start, n.Style, inFlow)
	case yaml.MappingNode, yaml.SequenceNode:
		if n.Style&yaml.FlowStyle != 0 {
			return flowEnd(e.src, start)
		}
		if len(n.Content) == 0 {
			return -1
		}
		return e.nodeEnd(n.Content[len(n.Content)-1], false)
	}
	return -1
}

func scalarEnd(src []byte, start int, style yaml.Style, inFlow bool) int {
	switch {
	case style&yaml.DoubleQuotedStyle != 0:
		for i := start + 1; i < len(src); i++ {
			switch src[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
		return -1
	case style&yaml.SingleQuotedStyle != 0:
		for i := start + 1; i < len(src); i++ {
			if src[i] == '\'' {
				if i+1 < len(src) && src[i+1] == '\'' {
					i++
					continue
				}
				return i + 1
			}
		}
		return -1
	}
	end := start
	for i := start; i < len(src); i++ {
		ch := src[i]
		if ch == '\n' || ch == '\r' {
			break
		}
		if inFlow && (ch == ',' || ch == ']' || ch == '}') {
			break
		}
		if ch == '#' && i > start && (src[i-1] == ' ' || src[i-1] == '\t') {
			break
		}
		if ch != ' ' && ch != '\t' {
			end = i + 1
		}
	}
	return end
}

// flowEnd finds the bracket closing the flow collection opening at start.
func flowEnd(src []byte, start int) int {
	depth := 0
	for i := start; i < len(src); i++ {
		switch src[i] {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return i + 1
			}
		case '"':
			j := scalarEnd(src, i, yaml.DoubleQuotedStyle, true)
			if j < 0 {
				return -1
			}
			i = j - 1
		case '\'':
			j := scalarEnd(src, i, yaml.SingleQuotedStyle, true)
			if j < 0 {
				return -1
			}
			i = j - 1
		case '#':
			if i > start && (src[i-1] == ' ' || src[i-1] == '\t') {
				for i < len(src) && src[i] != '\n' {
					i++
				}
			}
		}
	}
	return -1
}

// splice replaces src[start:end] with repl. When the edit is on one line
// and that line ends in a comment, the comment keeps its column.
func (e *editor) splice(start, end int, repl string) {
	if start < 0 || end < start || end > len(e.src) {
		e.text = nil
		return
	}
	tail := e.src[end:]
	if !bytes.ContainsAny(e.src[start:end], "\r\n") && !strings.ContainsAny(repl, "\r\n") {
		tail = e.alignComment(start, end, repl)
	}
	out := make([]byte, 0, len(e.src)+len(repl))
	out = append(out, e.src[:start]...)
	out = append(out, repl...)
	out = append(out, tail...)
	e.text = out
}

// alignComment returns src[end:] with the spaces before a trailing comment
// on the edited line adjusted so the comment stays in its column (at least
// one space is kept).
func (e *editor) alignComment(start, end int, repl string) []byte {
	tail := e.src[end:]
	eol := bytes.IndexByte(tail, '\n')
	if eol < 0 {
		eol = len(tail)
	}
	rest := tail[:eol]
	hash := -1
	for i, ch := range rest {
		if ch == '"' || ch == '\'' {
			return tail
		}
		if ch == '#' && i > 0 && (rest[i-1] == ' ' || rest[i-1] == '\t') {
			hash = i
			break
		}
	}
	if hash < 0 {
		return tail
	}
	ws := hash
	for ws > 0 && (rest[ws-1] == ' ' || rest[ws-1] == '\t') {
		ws--
	}
	if bytes.ContainsRune(rest[ws:hash], '\t') {
		return tail
	}
	lineStart := bytes.LastIndexByte(e.src[:start], '\n') + 1
	oldCol := utf8.RuneCount(e.src[lineStart:end]) + utf8.RuneCount(rest[:hash])
	newCol := utf8.RuneCount(e.src[lineStart:start]) + utf8.RuneCountInString(repl) + utf8.RuneCount(rest[:ws])
	pad := max(1, oldCol-newCol)
	out := make([]byte, 0, len(tail)+pad)
	out = append(out, rest[:ws]...)
	out = append(out, bytes.Repeat([]byte{' '}, pad)...)
	out = append(out, tail[hash:]...)
	return out
}

// replaceText swaps the text of old for nv rendered inline.
func (e *editor) replaceText(old *yaml.Node, inFlow bool, nv *yaml.Node) {
	if old.Anchor != "" || old.Style&yaml.TaggedStyle != 0 {
		return
	}
	repl := inline(nv)
	if repl == "" {
		return
	}
	start := e.offset(old.Line, old.Column)
	end := e.nodeEnd(old, inFlow)
	if start < 0 || end < 0 {
		return
	}
	if old.Kind != yaml.ScalarNode && old.Style&yaml.FlowStyle == 0 {
		return // a block section replaced by one line: leave it to the encoder
	}
	e.splice(start, end, repl)
}

// lineEnd returns the offset just past the newline ending the line that
// contains off (or len(src)).
func (e *editor) lineEnd(off int) int {
	if i := bytes.IndexByte(e.src[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(e.src)
}

// insertText adds "key: value" to mapping parent.
func (e *editor) insertText(parent *yaml.Node, key string, v *yaml.Node) {
	if parent.Style&yaml.FlowStyle != 0 {
		end := e.nodeEnd(parent, true)
		repl := inline(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: key}, v}})
		if end < 0 || len(repl) < 2 {
			return
		}
		entry := repl[1 : len(repl)-1] // strip { }
		if len(parent.Content) > 0 {
			entry = ", " + entry
		}
		e.splice(end-1, end-1, entry)
		return
	}
	if len(parent.Content) == 0 {
		return
	}
	indent := parent.Content[0].Column - 1
	keyStart := e.offset(parent.Content[0].Line, 1)
	if keyStart < 0 || strings.TrimSpace(string(e.src[keyStart:keyStart+indent])) != "" {
		return // the mapping does not start its own line ("- name: …")
	}
	end := e.nodeEnd(parent, false)
	if end < 0 {
		return
	}
	var b strings.Builder
	writeBlock(&b, indent, key, v)
	at := e.lineEnd(end)
	text := b.String()
	if at == len(e.src) && len(e.src) > 0 && e.src[len(e.src)-1] != '\n' {
		text = "\n" + text
	}
	e.splice(at, at, text)
}

// writeBlock renders key: value as block lines, nesting new sections.
func writeBlock(b *strings.Builder, indent int, key string, v *yaml.Node) {
	pad := strings.Repeat(" ", indent)
	if v.Kind == yaml.MappingNode && len(v.Content) == 2 && v.Style == 0 && v.Tag == "!!map" {
		b.WriteString(pad + key + ":\n")
		writeBlock(b, indent+2, v.Content[0].Value, v.Content[1])
		return
	}
	b.WriteString(pad + key + ": " + inline(v) + "\n")
}

// appendItemText appends an item to sequence seq.
func (e *editor) appendItemText(seq *yaml.Node, item *yaml.Node) {
	repl := inline(item)
	if repl == "" {
		return
	}
	if seq.Style&yaml.FlowStyle != 0 {
		end := e.nodeEnd(seq, true)
		if end < 0 {
			return
		}
		if len(seq.Content) > 0 {
			repl = ", " + repl
		}
		e.splice(end-1, end-1, repl)
		return
	}
	if len(seq.Content) == 0 {
		return
	}
	end := e.nodeEnd(seq, false)
	dash := e.offset(seq.Line, seq.Column)
	if end < 0 || dash < 0 || e.src[dash] != '-' {
		return
	}
	at := e.lineEnd(end)
	text := strings.Repeat(" ", seq.Column-1) + "- " + repl + "\n"
	if at == len(e.src) && len(e.src) > 0 && e.src[len(e.src)-1] != '\n' {
		text = "\n" + text
	}
	e.splice(at, at, text)
}

// removeText deletes a mapping entry (key != nil) or a list item.
func (e *editor) removeText(c, key, val *yaml.Node) {
	first := val
	if key != nil {
		first = key
	}
	inFlow := c.Style&yaml.FlowStyle != 0
	start := e.offset(first.Line, first.Column)
	end := e.nodeEnd(val, inFlow)
	if start < 0 || end < 0 {
		return
	}
	if inFlow {
		j := end
		for j < len(e.src) && (e.src[j] == ' ' || e.src[j] == '\t') {
			j++
		}
		if j < len(e.src) && e.src[j] == ',' {
			j++
			for j < len(e.src) && (e.src[j] == ' ' || e.src[j] == '\t' || e.src[j] == '\n' || e.src[j] == '\r') {
				j++
			}
			e.splice(start, j, "")
			return
		}
		i := start
		for i > 0 && (e.src[i-1] == ' ' || e.src[i-1] == '\t' || e.src[i-1] == '\n' || e.src[i-1] == '\r') {
			i--
		}
		if i > 0 && e.src[i-1] == ',' {
			i--
		}
		e.splice(i, end, "")
		return
	}
	lineStart := e.offset(first.Line, 1)
	if key == nil {
		// A block list item: the "- " precedes the item on its line.
		prefix := strings.TrimSpace(string(e.src[lineStart:start]))
		if prefix != "-" {
			return
		}
	} else if strings.TrimSpace(string(e.src[lineStart:start])) != "" {
		return
	}
	e.splice(lineStart, e.lineEnd(end), "")
}
