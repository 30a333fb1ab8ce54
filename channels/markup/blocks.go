package markup

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
)

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
