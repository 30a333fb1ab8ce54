package markup

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/util"
)

func (r *renderer) esc(s string) string {
	if r.d == dPlain {
		return s
	}
	return escapeHTML(s)
}

// escapeHTML escapes the three characters Telegram HTML and Slack mrkdwn
// reserve.
func escapeHTML(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	var b strings.Builder
	for _, c := range s {
		switch c {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

func escapeAttr(s string) string {
	return strings.ReplaceAll(escapeHTML(s), `"`, "&quot;")
}

// codeSpanText is a code span's literal content (line endings become spaces,
// as CommonMark specifies).
func codeSpanText(n *ast.CodeSpan, src []byte) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch t := c.(type) {
		case *ast.Text:
			v := t.Segment.Value(src)
			if len(v) > 0 && v[len(v)-1] == '\n' {
				b.Write(v[:len(v)-1])
				b.WriteByte(' ')
			} else {
				b.Write(v)
			}
		case *ast.String:
			b.Write(t.Value)
		}
	}
	return strings.ReplaceAll(b.String(), "\x00", "\uFFFD")
}

// decodeText resolves Markdown backslash escapes and HTML character
// references in one pass (so "\&amp;" stays "&amp;"), like goldmark's own
// HTML writer does, but produces plain text.
func decodeText(v []byte) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && i+1 < len(v) && util.IsPunct(v[i+1]):
			b.WriteByte(v[i+1])
			i++
		case c == '&':
			if s, n := entityAt(v[i:]); n > 0 {
				b.WriteString(s)
				i += n - 1
			} else {
				b.WriteByte('&')
			}
		case c == 0:
			b.WriteString("\uFFFD")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// entityAt decodes a character reference at the start of v ("&amp;",
// "&#123;", "&#x1F600;") and returns it with its length, or n == 0.
func entityAt(v []byte) (string, int) {
	end := -1
	for i := 1; i < len(v) && i < 40; i++ {
		if v[i] == ';' {
			end = i
			break
		}
		if !(v[i] == '#' || (v[i] < utf8.RuneSelf && (unicode.IsLetter(rune(v[i])) || unicode.IsDigit(rune(v[i]))))) {
			return "", 0
		}
	}
	if end < 2 {
		return "", 0
	}
	name := string(v[1:end])
	if name[0] == '#' {
		num, base := name[1:], 10
		if len(num) > 0 && (num[0] == 'x' || num[0] == 'X') {
			num, base = num[1:], 16
		}
		if num == "" || len(num) > 7 {
			return "", 0
		}
		x, err := strconv.ParseUint(num, base, 32)
		if err != nil {
			return "", 0
		}
		if x == 0 || !utf8.ValidRune(rune(x)) {
			return "\uFFFD", end + 1
		}
		return string(rune(x)), end + 1
	}
	if e, ok := util.LookUpHTML5EntityByName(name); ok {
		return string(e.Characters), end + 1
	}
	return "", 0
}
