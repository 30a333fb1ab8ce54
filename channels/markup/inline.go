package markup

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
)

func (r *renderer) inlines(n ast.Node) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		b.WriteString(r.inline(c))
	}
	return b.String()
}

func (r *renderer) inline(n ast.Node) string {
	switch n := n.(type) {
	case *ast.Text:
		var s string
		if n.IsRaw() {
			s = string(n.Value(r.src))
		} else {
			s = decodeText(n.Value(r.src))
		}
		s = r.esc(s)
		if n.HardLineBreak() || n.SoftLineBreak() {
			s += "\n" // chat text keeps the model's line breaks
		}
		return s
	case *ast.String:
		if n.IsRaw() || n.IsCode() {
			return r.esc(string(n.Value))
		}
		return r.esc(decodeText(n.Value))
	case *ast.CodeSpan:
		code := r.esc(codeSpanText(n, r.src))
		switch {
		case r.d == dTelegram && r.link == 0: // a link may not contain code
			return "<code>" + code + "</code>"
		case r.d == dSlack && code != "":
			return "`" + code + "`"
		}
		return code
	case *ast.Emphasis:
		if n.Level >= 2 {
			return r.styled(n, &r.bold, "<b>", "</b>", "*")
		}
		return r.styled(n, &r.italic, "<i>", "</i>", "_")
	case *east.Strikethrough:
		return r.styled(n, &r.strike, "<s>", "</s>", "~")
	case *ast.Link:
		r.link++
		label := r.inlines(n)
		r.link--
		return r.linkTo(decodeText(n.Destination), label, r.plainText(n))
	case *ast.Image:
		alt := r.plainText(n)
		if strings.TrimSpace(alt) == "" {
			alt = "image"
		}
		return r.linkTo(decodeText(n.Destination), r.esc(alt), alt)
	case *ast.AutoLink:
		url := string(n.URL(r.src))
		if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(url), "mailto:") {
			url = "mailto:" + url
		}
		label := string(n.Label(r.src))
		return r.linkTo(url, r.esc(label), label)
	case *ast.RawHTML:
		var b strings.Builder
		for i := 0; i < n.Segments.Len(); i++ {
			seg := n.Segments.At(i)
			b.Write(seg.Value(r.src))
		}
		return r.esc(b.String()) // shown as text, never passed through
	case *east.TaskCheckBox:
		if n.IsChecked {
			return "☑ "
		}
		return "☐ "
	}
	return r.inlines(n)
}

// styled wraps n's content in a Telegram tag or Slack marker, unless the same
// style is already open (no <b> inside <b>, no *…* inside *…*).
func (r *renderer) styled(n ast.Node, depth *int, open, close, mark string) string {
	*depth++
	inner := r.inlines(n)
	*depth--
	if *depth > 0 || strings.TrimSpace(inner) == "" {
		return inner
	}
	switch r.d {
	case dTelegram:
		return open + inner + close
	case dSlack:
		// Slack only honours a marker next to a non-space character.
		core := strings.TrimFunc(inner, unicode.IsSpace)
		lead := inner[:strings.Index(inner, core)]
		trail := inner[len(lead)+len(core):]
		return lead + mark + core + mark + trail
	}
	return inner
}

// plainText is n's content without markup, for comparing with URLs and alt text.
func (r *renderer) plainText(n ast.Node) string {
	p := &renderer{d: dPlain, src: r.src}
	return p.inlines(n)
}

// linkTo renders a link. label is already in the dialect; labelPlain is the
// same text without markup. Only absolute URLs with a known-safe scheme become
// links; anything else is shown as "label (url)".
func (r *renderer) linkTo(url, label, labelPlain string) string {
	url = cleanURL(url)
	same := strings.TrimSpace(labelPlain) == "" || strings.TrimSpace(labelPlain) == url
	if r.d != dPlain && r.link == 0 && allowedScheme(url, r.d) {
		switch r.d {
		case dTelegram:
			if same {
				label = escapeHTML(url)
			}
			return `<a href="` + escapeAttr(url) + `">` + label + "</a>"
		case dSlack:
			if same {
				return "<" + escapeHTML(url) + ">"
			}
			// a line break would end the link sequence (and pick up a quote prefix)
			return "<" + escapeHTML(url) + "|" + strings.ReplaceAll(label, "\n", " ") + ">"
		}
	}
	if url == "" {
		return label
	}
	if same {
		return r.esc(url)
	}
	return label + " (" + r.esc(url) + ")"
}

func allowedScheme(url string, d dialect) bool {
	u := strings.ToLower(url)
	for _, p := range []string{"http://", "https://", "mailto:", "ftp://"} {
		if strings.HasPrefix(u, p) && len(u) > len(p) {
			return true
		}
	}
	return d == dTelegram && strings.HasPrefix(u, "tg://") && len(u) > 5
}

// cleanURL percent-encodes what could break out of a link: whitespace,
// control characters, < > | (Slack's link syntax) and ".
func cleanURL(u string) string {
	var b strings.Builder
	for _, c := range strings.TrimSpace(u) {
		switch {
		case c <= ' ' || c == 0x7f || c == '<' || c == '>' || c == '|' || c == '"' || c == '`' ||
			unicode.IsSpace(c) || unicode.IsControl(c):
			buf := make([]byte, utf8.RuneLen(c))
			utf8.EncodeRune(buf, c)
			for _, x := range buf {
				fmt.Fprintf(&b, "%%%02X", x)
			}
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}
