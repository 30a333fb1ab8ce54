package tools

import (
	"bytes"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Page is the readable content of an HTML document.
type Page struct {
	// Title is the text of the first <title>, whitespace collapsed.
	Title string
	// Text is the body as lines: headings as "# ", list items as "- ",
	// table cells joined by " | ", links as "text (href)" with href made
	// absolute against the base URL. Whitespace is collapsed except in <pre>.
	Text string
}

// ExtractHTML turns an HTML document into readable text. Content of script,
// style, noscript, template, iframe, object, svg, math, canvas, select and
// textarea elements is dropped. It never fails: broken markup is read the way
// a browser's tokenizer reads it, and it streams tokens instead of building a
// tree, so nesting depth does not matter. base (may be nil) resolves relative
// links; only http, https and mailto links are shown. The result never
// contains "<script" in any letter case, even if the page's text does.
func ExtractHTML(doc []byte, base *url.URL) Page {
	z := html.NewTokenizer(bytes.NewReader(doc))
	x := extractor{base: base}
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break // io.EOF, or a read error of the in-memory reader: none
		}
		tok := z.Token()
		if x.skipping(tt, tok) {
			continue
		}
		switch tt {
		case html.TextToken:
			x.textToken(tok)
		case html.StartTagToken, html.SelfClosingTagToken:
			x.startTag(tt, tok)
		case html.EndTagToken:
			x.endTag(tok)
		}
	}
	x.closeLink()
	x.w.flush()
	return Page{
		Title: defangScript(collapseSpace(x.title)),
		Text:  defangScript(strings.Join(x.w.blocks, "\n")),
	}
}

// extractor is the state of one ExtractHTML run over the token stream.
type extractor struct {
	base      *url.URL
	w         textWriter
	title     string
	haveTitle bool
	inTitle   bool
	skipTag   atom.Atom // the dropped element being skipped
	skipName  string
	skipDepth int // nesting of skipTag; 0 = not skipping
	link      *openLink
}

// skipping reports whether tok is inside a dropped element (and so ignored),
// tracking the nesting of that element's own tags.
func (x *extractor) skipping(tt html.TokenType, tok html.Token) bool {
	if x.skipDepth == 0 {
		return false
	}
	if tok.DataAtom == x.skipTag && tok.Data == x.skipName {
		switch tt {
		case html.StartTagToken:
			x.skipDepth++
		case html.EndTagToken:
			x.skipDepth--
		}
	}
	return true
}

func (x *extractor) textToken(tok html.Token) {
	if x.inTitle {
		if !x.haveTitle {
			x.title += tok.Data
		}
		return
	}
	x.w.text(tok.Data)
}

// closeLink ends the open link, writing its target after its text (or as
// the text when the link has none).
func (x *extractor) closeLink() {
	if x.link == nil {
		return
	}
	l := x.link
	x.link = nil
	if l.href == "" {
		return
	}
	text := ""
	if x.w.flushes == l.flushes && x.w.cur.Len() >= l.start {
		text = strings.TrimSpace(x.w.cur.String()[l.start:])
	}
	switch {
	case text == "":
		x.w.text(l.href)
	case text != l.href:
		x.w.text(" (" + l.href + ")")
	}
}

func (x *extractor) startTag(tt html.TokenType, tok html.Token) {
	w := &x.w
	if dropped[tok.DataAtom] {
		if tt == html.StartTagToken && !voidElement[tok.DataAtom] {
			x.skipTag, x.skipName, x.skipDepth = tok.DataAtom, tok.Data, 1
		}
		return
	}
	switch tok.DataAtom {
	case atom.Title:
		x.inTitle = tt == html.StartTagToken
		return
	case atom.A:
		x.closeLink()
		if tt == html.StartTagToken {
			x.link = &openLink{href: linkTarget(attr(tok, "href"), x.base), flushes: w.flushes}
			w.sep()
			x.link.start = w.cur.Len()
		}
		return
	case atom.Pre:
		w.flush()
		w.pre++
		return
	case atom.Td, atom.Th:
		w.cell()
		return
	case atom.Li, atom.Dt, atom.Dd:
		x.closeLink()
		w.flush()
		w.prefix = "- "
		return
	}
	if lvl := headingLevel(tok.DataAtom); lvl > 0 {
		x.closeLink()
		w.flush()
		w.prefix = strings.Repeat("#", lvl) + " "
		return
	}
	if blockElement[tok.DataAtom] {
		x.closeLink()
		w.flush()
	}
}

func (x *extractor) endTag(tok html.Token) {
	w := &x.w
	switch tok.DataAtom {
	case atom.Title:
		if x.inTitle {
			x.inTitle = false
			x.haveTitle = true
		}
		return
	case atom.A:
		x.closeLink()
		return
	case atom.Pre:
		w.flush()
		if w.pre > 0 {
			w.pre--
		}
		return
	}
	if blockElement[tok.DataAtom] || headingLevel(tok.DataAtom) > 0 ||
		tok.DataAtom == atom.Li || tok.DataAtom == atom.Dt || tok.DataAtom == atom.Dd {
		x.closeLink()
		w.flush()
	}
}

type openLink struct {
	href    string
	start   int
	flushes int
}

// dropped elements lose their whole content.
var dropped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Iframe: true, atom.Object: true, atom.Embed: true, atom.Svg: true,
	atom.Math: true, atom.Canvas: true, atom.Select: true, atom.Textarea: true,
	atom.Noembed: true, atom.Noframes: true, atom.Frameset: true,
}

var voidElement = map[atom.Atom]bool{atom.Embed: true}

var blockElement = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true,
	atom.Body: true, atom.Br: true, atom.Caption: true, atom.Details: true,
	atom.Dialog: true, atom.Div: true, atom.Dl: true, atom.Fieldset: true,
	atom.Figcaption: true, atom.Figure: true, atom.Footer: true, atom.Form: true,
	atom.Header: true, atom.Hr: true, atom.Html: true, atom.Main: true,
	atom.Nav: true, atom.Ol: true, atom.P: true, atom.Section: true,
	atom.Summary: true, atom.Table: true, atom.Tbody: true, atom.Tfoot: true,
	atom.Thead: true, atom.Tr: true, atom.Ul: true, atom.Head: true,
}

func headingLevel(a atom.Atom) int {
	switch a {
	case atom.H1:
		return 1
	case atom.H2:
		return 2
	case atom.H3:
		return 3
	case atom.H4:
		return 4
	case atom.H5:
		return 5
	case atom.H6:
		return 6
	}
	return 0
}

func attr(t html.Token, name string) string {
	for _, a := range t.Attr {
		if a.Namespace == "" && a.Key == name {
			return a.Val
		}
	}
	return ""
}

// linkTarget resolves href against base and keeps it only if it leads
// somewhere a reader could go (http, https, mailto); fragments and
// javascript: or data: URLs give "".
func linkTarget(href string, base *url.URL) string {
	href = strings.TrimSpace(href)
	if href == "" || strings.HasPrefix(href, "#") {
		return ""
	}
	u, err := url.Parse(href)
	if err != nil {
		return ""
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "mailto":
	default:
		return ""
	}
	u.User = nil
	return u.String()
}

// textWriter accumulates blocks (output lines) of collapsed inline text.
type textWriter struct {
	blocks       []string
	cur          strings.Builder
	prefix       string
	spacePending bool
	pre          int
	flushes      int
}

func (w *textWriter) text(s string) {
	if w.pre > 0 {
		w.cur.WriteString(s)
		return
	}
	for _, r := range s {
		if unicode.IsSpace(r) {
			w.spacePending = w.cur.Len() > 0
			continue
		}
		if w.spacePending {
			w.cur.WriteByte(' ')
			w.spacePending = false
		}
		w.cur.WriteRune(r)
	}
}

// sep makes the next inline text start after a space if the line has text.
func (w *textWriter) sep() {
	if w.cur.Len() > 0 && w.pre == 0 {
		w.spacePending = true
	}
}

// cell separates table cells on one line.
func (w *textWriter) cell() {
	if w.cur.Len() > 0 {
		w.cur.WriteString(" | ")
		w.spacePending = false
	}
}

func (w *textWriter) flush() {
	s := w.cur.String()
	if w.pre > 0 {
		s = strings.Trim(s, "\n")
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	} else {
		s = strings.TrimSuffix(strings.TrimSpace(s), " |")
	}
	if strings.TrimSpace(s) != "" {
		w.blocks = append(w.blocks, w.prefix+s)
	}
	w.cur.Reset()
	w.prefix = ""
	w.spacePending = false
	w.flushes++
}

func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// defangScript inserts a space after every '<' that begins "script" (or
// "/script") in any case, Unicode case folding included, so text taken from
// a page can never be read as a script tag. Inserting a space after '<' can
// not create a new occurrence.
func defangScript(s string) string {
	if !strings.Contains(s, "<") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		b.WriteByte(s[i])
		if s[i] != '<' {
			continue
		}
		rest := s[i+1:]
		rest = strings.TrimPrefix(rest, "/")
		if hasFoldPrefix(rest, "script") {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// hasFoldPrefix reports whether s starts with runes that each equal the
// corresponding ASCII letter of word under simple Unicode case folding or
// unicode.ToLower (which maps U+0130 'İ' to 'i').
func hasFoldPrefix(s, word string) bool {
	for i := 0; i < len(word); i++ {
		r, n := utf8.DecodeRuneInString(s)
		if n == 0 || !foldEq(r, rune(word[i])) {
			return false
		}
		s = s[n:]
	}
	return true
}

func foldEq(r, c rune) bool {
	if r == c || unicode.ToLower(r) == c {
		return true
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f == c {
			return true
		}
	}
	return false
}
