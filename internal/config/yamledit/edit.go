// Package yamledit edits one key of a YAML document while keeping the
// operator's file as it was: comments, key order, quoting and, wherever the
// edit can be made textually, every other byte. It knows nothing of the
// configuration schema: the caller resolves a dotted key into a Path of
// segments (mapping field, free-form mapping key, list item by index or by
// "name") and says whether the leaf is a string. An edit is applied to the
// node tree (the intended result) and, best effort, to the text; Result
// returns the text only when it parses to exactly the intended tree and the
// re-encoded tree otherwise. internal/config validates the result
// (config.SetInFile) before WriteAtomic puts it in place.
package yamledit

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SegKind says what a path segment addresses.
type SegKind int

// Segment kinds.
const (
	Field  SegKind = iota // a key of a fixed mapping (a struct field)
	MapKey                // a key of a free-form mapping (personas.by_target)
	Item                  // a list item, by index or (jobs) by its "name"
)

// Seg is one segment of a Path.
type Seg struct {
	Kind SegKind
	Name string
}

// ErrNoChange means the edit left the document as it was.
var ErrNoChange = errors.New("no change")

// Editor applies one edit to a document, both to the node tree (the
// intended result) and, where it can, to the text (the preferred result).
type Editor struct {
	src        []byte
	doc        *yaml.Node // document node; mutated by the edit
	path       []Seg
	stringLeaf bool
	key        string

	// text is the textually edited file, nil when no textual edit applies.
	text []byte
	// lineStart[i] is the byte offset of line i+1.
	lineStart []int
}

// New returns an Editor of data for the value at path. key is the dotted
// key, used in messages; stringLeaf makes Set take unquoted values
// literally. An empty (or null) document starts as an empty mapping; the
// error is the YAML parser's.
func New(data []byte, path []Seg, key string, stringLeaf bool) (*Editor, error) {
	if len(path) == 0 {
		return nil, errors.New("yamledit: empty path")
	}
	e := &Editor{src: data, path: path, stringLeaf: stringLeaf, key: key}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
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

// Result returns the edited file: the textual edit if it parses to exactly
// the intended tree, otherwise the re-encoded tree.
func (e *Editor) Result() ([]byte, error) {
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
func (e *Editor) locate() (steps []step, node *yaml.Node, err error) {
	node = e.doc.Content[0]
	for _, s := range e.path {
		if node.Kind == yaml.AliasNode || node.Anchor != "" {
			return nil, nil, fmt.Errorf("cannot edit through a YAML anchor or alias; edit the file by hand")
		}
		switch s.Kind {
		case Field, MapKey:
			if node.Kind != yaml.MappingNode {
				return steps, node, nil
			}
			idx := -1
			for i := 0; i+1 < len(node.Content); i += 2 {
				if node.Content[i].Value == s.Name {
					idx = i
				}
			}
			steps = append(steps, step{container: node, keyIdx: idx})
			if idx < 0 {
				return steps, nil, nil
			}
			node = node.Content[idx+1]
		case Item:
			if node.Kind != yaml.SequenceNode {
				return steps, node, nil
			}
			idx := -1
			if i, err := strconv.Atoi(s.Name); err == nil {
				if i >= 0 && i < len(node.Content) {
					idx = i
				} else if i != len(node.Content) {
					return nil, nil, fmt.Errorf("no item %d (the list has %d)", i, len(node.Content))
				}
			} else {
				for i, it := range node.Content {
					if it.Kind == yaml.MappingNode && mappingValue(it, "name") == s.Name {
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
func (e *Editor) valueNode(value string) (*yaml.Node, error) {
	stringLike := e.stringLeaf
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
		// The value is not quoted: a section's value can hold a secret
		// ({api_key: …}), and this error is printed and audited.
		return nil, fmt.Errorf("the value is not valid YAML: %v", strings.TrimPrefix(perr.Error(), "yaml: "))
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

// Set sets the value at the path. value is read as a YAML scalar or flow
// collection ("42", "true", "5m", "[a, b]", "{name: x, …}"); for a string
// leaf a value that is not itself a quoted YAML scalar is taken literally.
// A named list item (a job) that does not exist is appended with its name.
// ErrNoChange when the value is already there.
func (e *Editor) Set(value string) error {
	nv, err := e.valueNode(value)
	if err != nil {
		return err
	}
	steps, node, err := e.locate()
	if err != nil {
		return err
	}
	if err := e.nameNewItem(steps, nv); err != nil {
		return err
	}
	if node != nil && len(steps) == len(e.path) {
		return e.replace(steps[len(steps)-1], nv)
	}

	// A list item that does not exist can only be added whole.
	if miss := len(steps) - 1; miss >= 0 && miss < len(e.path)-1 && steps[miss].keyIdx < 0 && e.path[miss].Kind == Item {
		if _, err := strconv.Atoi(e.path[miss].Name); err == nil {
			return fmt.Errorf("no item %s (the list has %d)", e.path[miss].Name, len(steps[miss].container.Content))
		}
		return fmt.Errorf("no job named %q; to add one set a whole job: '{schedule: \"0 9 * * *\", kind: task, prompt: ..., deliver_to: [target]}'", truncate(e.path[miss].Name, 60))
	}

	// The path exists up to the deepest step; build the rest.
	parent := e.doc.Content[0]
	rest := e.path
	if len(steps) > 0 {
		parent = steps[len(steps)-1].container
		rest = e.path[len(steps)-1:]
	}
	if node != nil {
		// The walk stopped at a node of the wrong kind (null or scalar):
		// replace it with the structure the path needs.
		return e.replaceWrongKind(steps, rest, nv)
	}
	sub := buildPath(rest[1:], nv)
	first := rest[0]
	if parent.Kind == yaml.MappingNode {
		e.insertText(parent, first.Name, sub)
		k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: first.Name}
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

// nameNewItem gives a whole new named list item (a job) its name.
func (e *Editor) nameNewItem(steps []step, nv *yaml.Node) error {
	last := e.path[len(e.path)-1]
	if last.Kind != Item || len(steps) != len(e.path) || steps[len(steps)-1].keyIdx >= 0 {
		return nil
	}
	if _, err := strconv.Atoi(last.Name); err == nil {
		return nil
	}
	if nv.Kind != yaml.MappingNode {
		return fmt.Errorf("no job named %q; to add one set a whole job: '{schedule: \"0 9 * * *\", kind: task, prompt: ..., deliver_to: [target]}'", truncate(last.Name, 60))
	}
	if mappingValue(nv, "name") == "" {
		nv.Content = append([]*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: "name"}, {Kind: yaml.ScalarNode, Tag: "!!str", Value: last.Name}}, nv.Content...)
	}
	return nil
}

// replace puts nv in place of the existing value at st, keeping the
// operator's quoting and comments.
func (e *Editor) replace(st step, nv *yaml.Node) error {
	var old *yaml.Node
	if st.container.Kind == yaml.MappingNode {
		old = st.container.Content[st.keyIdx+1]
	} else {
		old = st.container.Content[st.keyIdx]
	}
	if sameTree(old, nv) {
		return ErrNoChange
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

// replaceWrongKind replaces a null/scalar node found where the path needs a
// mapping or list.
func (e *Editor) replaceWrongKind(steps []step, rest []Seg, nv *yaml.Node) error {
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
func buildPath(rest []Seg, v *yaml.Node) *yaml.Node {
	if len(rest) == 0 {
		return v
	}
	s := rest[0]
	inner := buildPath(rest[1:], v)
	if s.Kind == Item {
		if _, err := strconv.Atoi(s.Name); err != nil && inner.Kind == yaml.MappingNode && mappingValue(inner, "name") == "" {
			inner.Content = append([]*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: "name"}, {Kind: yaml.ScalarNode, Tag: "!!str", Value: s.Name}}, inner.Content...)
		}
		return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{inner}}
	}
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: s.Name}, inner}}
}

// Unset removes the path's key or item; ErrNoChange when it is absent.
func (e *Editor) Unset() error {
	steps, node, err := e.locate()
	if err != nil {
		return err
	}
	if node == nil || len(steps) != len(e.path) {
		return ErrNoChange
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

// HasKey reports whether the dotted mapping path key exists in data.
func HasKey(data []byte, key string) bool {
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

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// truncate shortens s to n runes for a message, marking the cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(s) <= n || len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
