package markup

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// dialect selects the output markup of the shared renderer.
type dialect int

const (
	dPlain dialect = iota
	dTelegram
	dSlack
)

// parse turns Markdown into goldmark's AST (CommonMark + GFM: tables,
// strikethrough, task lists, bare-URL links). A parser is built per call: it is
// cheap next to an LLM turn and keeps the package free of shared state.
func parse(md string) (ast.Node, []byte) {
	src := []byte(strings.ToValidUTF8(md, "\uFFFD"))
	p := goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser()
	return p.Parse(text.NewReader(src)), src
}

// render converts md to the dialect.
func render(md string, d dialect) string {
	doc, src := parse(md)
	r := &renderer{d: d, src: src}
	r.w.r = r
	r.w.lineStart = true
	r.blocks(doc)
	r.closeQuoteTag()
	out := strings.TrimRightFunc(r.w.b.String(), unicode.IsSpace)
	return strings.TrimLeft(out, "\n")
}

type renderer struct {
	d   dialect
	src []byte
	w   writer

	// inline state: open formatting, so nothing is opened twice
	bold, italic, strike, link int

	// Telegram blockquotes are a tag, opened lazily before the quote's first
	// visible content and closed around code blocks (pre may not sit in a
	// blockquote) and at the quote's end; nested quotes are flattened.
	quoteDepth   int
	quoteAt      int // len(w.prefixes) when the quote began
	quotePending bool
	quoteOpen    bool
	inPre        bool
}

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

func (r *renderer) openQuoteTag() {
	if r.quotePending && !r.quoteOpen && !r.inPre {
		r.w.b.WriteString("<blockquote>")
		r.quoteOpen = true
	}
}

func (r *renderer) closeQuoteTag() {
	if r.quoteOpen {
		r.w.raw("</blockquote>")
		r.quoteOpen = false
	}
}

func (r *renderer) blocks(n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		r.block(c)
	}
}

func (r *renderer) block(n ast.Node) {
	w := &r.w
	switch n := n.(type) {
	case *ast.Paragraph:
		w.sep(2)
		w.write(strings.TrimRight(r.inlines(n), "\n"))
	case *ast.TextBlock:
		w.sep(1)
		w.write(strings.TrimRight(r.inlines(n), "\n"))
	case *ast.Heading:
		w.sep(2)
		w.write(strings.TrimRight(r.styled(n, &r.bold, "<b>", "</b>", "*"), "\n"))
	case *ast.ThematicBreak:
		w.sep(2)
		w.write("──────────")
	case *ast.FencedCodeBlock:
		r.codeBlock(n, string(n.Language(r.src)))
	case *ast.CodeBlock:
		r.codeBlock(n, "")
	case *ast.Blockquote:
		r.blockquote(n)
	case *ast.List:
		r.list(n)
	case *ast.HTMLBlock:
		// Raw HTML from the model is shown as text, never passed through.
		var b strings.Builder
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			b.Write(seg.Value(r.src))
		}
		if n.HasClosure() {
			b.Write(n.ClosureLine.Value(r.src))
		}
		if s := strings.TrimRight(b.String(), "\n"); strings.TrimSpace(s) != "" {
			w.sep(2)
			w.write(r.esc(s))
		}
	case *east.Table:
		r.table(n)
	case *ast.LinkReferenceDefinition:
		// definitions are not content
	default:
		r.blocks(n)
	}
}

func (r *renderer) codeBlock(n ast.Node, lang string) {
	var b strings.Builder
	lines := n.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		b.Write(seg.Value(r.src))
	}
	code := strings.TrimRight(b.String(), "\n")
	if strings.TrimSpace(code) == "" {
		return // nothing visible; an empty pre is rejected by some platforms
	}
	r.preformatted(code, lang)
}

// preformatted writes a code block or a table laid out in monospace.
func (r *renderer) preformatted(code, lang string) {
	w := &r.w
	switch r.d {
	case dTelegram:
		r.closeQuoteTag()
		w.sep(2)
		w.noIndent, r.inPre = true, true
		if lang = cleanLang(lang); lang != "" {
			w.write(`<pre><code class="language-` + lang + `">` + escapeHTML(code) + "</code></pre>")
		} else {
			w.write("<pre>" + escapeHTML(code) + "</pre>")
		}
		w.noIndent, r.inPre = false, false
	case dSlack:
		w.sep(2)
		w.noIndent = true
		w.write("```\n" + escapeHTML(code) + "\n```") // Slack has no language tag
		w.noIndent = false
	default:
		w.sep(2)
		w.write(code)
	}
}

// cleanLang keeps the characters a language name needs, so the class
// attribute can never be broken out of.
func cleanLang(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c < utf8.RuneSelf && (c == '-' || c == '_' || c == '+' || c == '#' || c == '.' ||
			unicode.IsLetter(c) || unicode.IsDigit(c)) {
			b.WriteRune(c)
		}
	}
	return b.String()
}

func (r *renderer) blockquote(n *ast.Blockquote) {
	w := &r.w
	w.sep(2)
	if r.d == dTelegram {
		r.quoteDepth++
		if r.quoteDepth == 1 {
			r.quoteAt, r.quotePending = len(w.prefixes), true
		}
		w.suppress = true
		r.blocks(n)
		w.suppress = false
		r.quoteDepth--
		if r.quoteDepth == 0 {
			r.closeQuoteTag()
			r.quotePending, r.quoteAt = false, -1
		}
		return
	}
	r.quoteDepth++
	if r.quoteDepth > 1 { // no nested quotes: flatten
		w.suppress = true
		r.blocks(n)
		w.suppress = false
	} else {
		w.push(prefix{text: "> ", quote: true})
		r.blocks(n)
		w.pop()
	}
	r.quoteDepth--
}

func (r *renderer) list(n *ast.List) {
	w := &r.w
	between := 2
	if n.IsTight {
		between = 1
	}
	if item, ok := n.Parent().(*ast.ListItem); ok {
		if parent, ok := item.Parent().(*ast.List); ok && parent.IsTight {
			w.sep(1)
		} else {
			w.sep(2)
		}
	} else {
		w.sep(2)
	}
	num := n.Start
	for c, i := n.FirstChild(), 0; c != nil; c, i = c.NextSibling(), i+1 {
		if i > 0 {
			w.sep(between)
		}
		marker := "• "
		if n.IsOrdered() {
			marker = strconv.Itoa(num) + string(n.Marker) + " "
			num++
		}
		w.push(prefix{text: strings.Repeat(" ", utf8.RuneCountInString(marker)), first: marker})
		if c.ChildCount() == 0 {
			w.write(strings.TrimSpace(marker))
		}
		r.blocks(c)
		w.pop()
	}
}

// table lays a GFM table out as aligned monospace lines.
func (r *renderer) table(n *east.Table) {
	plain := &renderer{d: dPlain, src: r.src}
	var rows [][]string
	for row := n.FirstChild(); row != nil; row = row.NextSibling() {
		var cells []string
		for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
			s := strings.Join(strings.Fields(plain.inlines(cell)), " ")
			cells = append(cells, s)
		}
		rows = append(rows, cells)
	}
	if len(rows) == 0 {
		return
	}
	var widths []int
	for _, row := range rows {
		for i, c := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], displayWidth(c))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		for i, c := range cells {
			if i > 0 {
				b.WriteString(" | ")
			}
			pad := widths[i] - displayWidth(c)
			left := 0
			if i < len(n.Alignments) {
				switch n.Alignments[i] {
				case east.AlignRight:
					left = pad
				case east.AlignCenter:
					left = pad / 2
				}
			}
			b.WriteString(strings.Repeat(" ", left))
			b.WriteString(c)
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", pad-left))
			}
		}
		b.WriteString("\n")
	}
	for i, row := range rows {
		line(row)
		if i == 0 {
			dashes := make([]string, len(widths))
			for j, wd := range widths {
				dashes[j] = strings.Repeat("-", max(wd, 1))
			}
			b.WriteString(strings.Join(dashes, "-+-") + "\n")
		}
	}
	r.preformatted(strings.TrimRight(b.String(), "\n "), "")
}

// displayWidth counts East Asian wide characters as two columns.
func displayWidth(s string) int {
	n := 0
	for _, c := range s {
		switch {
		case unicode.Is(unicode.Mn, c) || c == '\u200d' || (c >= '\ufe00' && c <= '\ufe0f'):
		case unicode.Is(unicode.Han, c) || unicode.Is(unicode.Hiragana, c) || unicode.Is(unicode.Katakana, c) ||
			unicode.Is(unicode.Hangul, c) || (c >= 0xFF01 && c <= 0xFF60) || (c >= 0x3000 && c <= 0x303F) ||
			c >= 0x1F300:
			n += 2
		default:
			n++
		}
	}
	return n
}

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
