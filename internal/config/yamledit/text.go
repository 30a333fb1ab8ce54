package yamledit

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Textual edits: best effort; Result verifies them.

// offset converts a node's 1-based line and (character) column to a byte
// offset, or -1.
func (e *Editor) offset(line, col int) int {
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
func (e *Editor) nodeEnd(n *yaml.Node, inFlow bool) int {
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
func (e *Editor) splice(start, end int, repl string) {
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
func (e *Editor) alignComment(start, end int, repl string) []byte {
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
func (e *Editor) replaceText(old *yaml.Node, inFlow bool, nv *yaml.Node) {
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
func (e *Editor) lineEnd(off int) int {
	if i := bytes.IndexByte(e.src[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(e.src)
}

// insertText adds "key: value" to mapping parent.
func (e *Editor) insertText(parent *yaml.Node, key string, v *yaml.Node) {
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
func (e *Editor) appendItemText(seq *yaml.Node, item *yaml.Node) {
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
func (e *Editor) removeText(c, key, val *yaml.Node) {
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
