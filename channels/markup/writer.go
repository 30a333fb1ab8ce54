package markup

import (
	"strings"
)

// prefix is one level of line prefix: list indentation or a quote marker.
type prefix struct {
	text  string // written at the start of every line
	first string // written instead of text on the next line only (list marker)
	quote bool
}

// writer writes block content line by line, adding the container prefixes
// (list indentation, "> ") at the start of each non-empty line.
type writer struct {
	r         *renderer
	b         strings.Builder
	prefixes  []prefix
	lineStart bool
	content   bool // anything visible written yet
	nl        int  // newlines at the end of the output
	noIndent  bool // code blocks: only quote prefixes
	suppress  bool // the next separator is swallowed (first block of a container)
}

func (w *writer) write(s string) {
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		seg := s
		if i >= 0 {
			seg = s[:i]
		}
		if seg != "" {
			w.startLine()
			w.b.WriteString(seg)
			w.nl, w.content, w.suppress = 0, true, false
		}
		if i < 0 {
			return
		}
		if w.lineStart {
			w.blankLinePrefix()
		}
		w.b.WriteByte('\n')
		w.lineStart = true
		w.nl++
		s = s[i+1:]
	}
}

// raw writes s without prefixes (Telegram closing tags).
func (w *writer) raw(s string) {
	w.b.WriteString(s)
	w.nl = 0
}

func (w *writer) startLine() {
	r := w.r
	if w.lineStart {
		// Slack only sees a quote when ">" starts the line, so the (single)
		// quote marker goes first, then list indentation.
		for pass := 0; pass < 2; pass++ {
			for idx := range w.prefixes {
				p := &w.prefixes[idx]
				if p.quote != (pass == 0) {
					continue
				}
				if idx == r.quoteAt {
					r.openQuoteTag()
				}
				if w.noIndent && !p.quote && p.first == "" {
					continue // code keeps its own indentation; a pending list marker still shows
				}
				if p.first != "" {
					w.b.WriteString(p.first)
					p.first = ""
				} else {
					w.b.WriteString(p.text)
				}
			}
		}
		w.lineStart = false
	}
	r.openQuoteTag()
}

// blankLinePrefix keeps a quote going across blank lines (Slack, plain).
func (w *writer) blankLinePrefix() {
	last := -1
	for i, p := range w.prefixes {
		if p.quote {
			last = i
		}
	}
	if last < 0 {
		return
	}
	w.b.WriteString(strings.TrimRight(w.prefixes[last].text, " "))
}

// sep ends the previous block with n newlines (one = next line, two = blank line).
func (w *writer) sep(n int) {
	if w.suppress || !w.content {
		return
	}
	for w.nl < n {
		w.write("\n")
	}
}

func (w *writer) push(p prefix) {
	w.prefixes = append(w.prefixes, p)
	w.suppress = true
}

func (w *writer) pop() {
	w.prefixes = w.prefixes[:len(w.prefixes)-1]
	w.suppress = false
}
