package markup

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// breakKind ranks the places where a chunk may end; higher is better.
type breakKind int8

const (
	brNever    breakKind = iota // only as a last resort (would leave an empty code block)
	brHard                      // inside a word
	brSpace                     // between words
	brSentence                  // after . ! ? (or 。！？ with no space)
	brLine                      // at a line break
	brPara                      // at a blank line
)

// fence is one fenced code block the splitter protects.
type fence struct {
	reopen string // opening line written at the start of a continuation chunk
	suffix string // "\n" + closing fence appended to a chunk cut inside the block
	open   fenceLine
}

func (f *fence) overhead() int { return runeLen(f.reopen) + 1 + runeLen(f.suffix) }

// unit is the smallest piece the splitter moves between chunks. Concatenating
// sep+body of every unit reproduces the document (minus trailing whitespace).
type unit struct {
	sep  []rune    // whitespace before body; dropped when the unit starts a chunk
	body []rune    // moved as a whole
	brk  breakKind // how good a cut right before this unit is
	in   *fence    // code or closing line of this fence: a chunk starting here reopens it
	open *fence    // fence still open after this unit: a chunk ending here closes it
}

// Split splits Markdown into chunks of at most limit runes (Unicode code
// points — not bytes, not UTF-16 units; callers whose platform counts
// differently re-measure, as TelegramChunks does). A limit below 1 means "no
// limit": the trimmed text comes back as one chunk. Cuts are made, in order of
// preference, at a blank line, a line break, the end of a sentence, a space,
// and only then inside a word (never inside a rune, and avoiding splitting
// a character from its combining marks / emoji joiners). A better-ranked cut
// is taken only if it keeps at least half of what the chunk could hold, so
// chunks are not needlessly small.
//
// Fenced code blocks (``` or ~~~, also inside quotes and list items) are never
// left open: a block cut across chunks is closed at the end of one chunk and
// reopened with the same info string (```go) at the start of the next, and a
// block the model left unclosed is closed at the end. Protection applies when
// the fence lines take at most half of the limit; absurdly long fence lines are
// split like ordinary text.
//
// No chunk is empty or whitespace-only, order is kept, and concatenating the
// chunks keeps every non-whitespace character of md (the only additions are
// the closing/reopening fence lines). Invalid UTF-8 becomes U+FFFD.
func Split(md string, limit int) []string {
	return splitMarkdown(md, limit, 0)
}

// splitMarkdown is Split with an optional soft line limit per chunk (0 = none):
// chunks are kept under maxLines lines wherever a cut allows it.
func splitMarkdown(md string, limit, maxLines int) []string {
	pieces := splitPieces(md, limit, maxLines)
	if len(pieces) == 0 {
		return nil
	}
	out := make([]string, len(pieces))
	for i, p := range pieces {
		out[i] = p.String()
	}
	return out
}

// piece is one chunk: body is a contiguous stretch of the source (trimmed);
// prefix and suffix are the fence lines the splitter added around it.
type piece struct {
	prefix, body, suffix string
}

func (p piece) String() string { return p.prefix + p.body + p.suffix }

func splitPieces(md string, limit, maxLines int) []piece {
	md = strings.ToValidUTF8(md, "\uFFFD")
	if strings.TrimSpace(md) == "" {
		return nil
	}
	if limit < 1 {
		return []piece{{body: strings.TrimSpace(md)}}
	}
	s := &splitter{limit: limit, maxLines: maxLines}
	s.tokenize(md)
	s.explode()
	return s.pack()
}

type splitter struct {
	limit    int
	maxLines int
	units    []unit
}

// fenceLine describes a line that opens or closes a fenced code block.
type fenceLine struct {
	indent string // leading whitespace and blockquote markers
	char   byte   // '`' or '~'
	count  int
	info   string // trimmed info string
	rest   string // everything after the markers
}

// parseFenceLine reports whether line is a code fence, after any indentation
// and blockquote markers ("> "). Fences nested in quotes or list items are
// recognized too; the prefix is repeated when the fence is reopened.
func parseFenceLine(line string) (fenceLine, bool) {
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '>') {
		i++
	}
	rest := line[i:]
	if len(rest) < 3 || (rest[0] != '`' && rest[0] != '~') {
		return fenceLine{}, false
	}
	ch := rest[0]
	n := 0
	for n < len(rest) && rest[n] == ch {
		n++
	}
	if n < 3 {
		return fenceLine{}, false
	}
	after := rest[n:]
	if ch == '`' && strings.IndexByte(after, '`') >= 0 {
		return fenceLine{}, false // CommonMark: a backtick fence's info has no backticks
	}
	return fenceLine{indent: line[:i], char: ch, count: n, info: strings.TrimSpace(after), rest: after}, true
}

func (f fenceLine) closes(open fenceLine) bool {
	return f.char == open.char && f.count >= open.count && strings.TrimSpace(f.rest) == ""
}

// tokenize turns the document into units: words (with the whitespace before
// them) outside code, whole lines inside protected code blocks.
func (s *splitter) tokenize(md string) {
	var (
		pending  []rune // whitespace waiting for the next unit
		prevBody []rune
		glue     bool   // the next non-space rune extends the last unit's word
		open     *fence // protected fence we are inside
		openLine fenceLine
		inFence  bool // inside a fence (protected or not)
		first    bool // next code line is the first of its block
		blank    bool // previous code line was blank
	)
	tokenizeText := func(line string) {
		for _, r := range line {
			if unicode.IsSpace(r) {
				pending = append(pending, r)
				glue = false
				continue
			}
			if glue && len(pending) == 0 {
				last := &s.units[len(s.units)-1]
				last.body = append(last.body, r)
			} else {
				s.units = append(s.units, unit{sep: pending, body: []rune{r}, brk: classify(pending, prevBody)})
				pending = nil
			}
			prevBody = s.units[len(s.units)-1].body
			glue = !endsSentenceCJK(prevBody)
		}
	}
	for li, line := range strings.Split(md, "\n") {
		if li > 0 && (!inFence || open == nil) {
			pending = append(pending, '\n') // code lines carry their own newline
			glue = false
		}
		fl, isFence := parseFenceLine(line)
		switch {
		case !inFence && isFence:
			inFence, openLine = true, fl
			open = s.newFence(fl, line)
			if open == nil { // unprotected: split like text, but keep tracking the fence
				tokenizeText(line)
				continue
			}
			s.units = append(s.units, unit{sep: pending, body: []rune(line), brk: classify(pending, prevBody), open: open})
			pending, prevBody, glue = nil, nil, false
			first, blank = true, false
		case inFence && isFence && fl.closes(openLine):
			inFence = false
			if open == nil {
				tokenizeText(line)
				continue
			}
			s.units = append(s.units, unit{sep: []rune{'\n'}, body: []rune(line), brk: brNever, in: open})
			open, prevBody, glue = nil, []rune(line), false
		case inFence && open != nil:
			brk := brLine
			switch {
			case first:
				brk = brNever // keep the opening line with some code
			case blank:
				brk = brPara // cut after a blank line, not before it
			}
			s.units = append(s.units, unit{sep: []rune{'\n'}, body: []rune(line), brk: brk, in: open, open: open})
			first, blank = false, strings.TrimSpace(line) == ""
		default:
			tokenizeText(line)
		}
	}
	// trailing whitespace (pending) is dropped
}

// classify ranks a cut at whitespace sep that follows prev.
func classify(sep, prev []rune) breakKind {
	switch nl := countNL(sep); {
	case nl >= 2:
		return brPara
	case nl == 1:
		return brLine
	case len(sep) == 0:
		if endsSentenceCJK(prev) {
			return brSentence
		}
		return brHard
	case endsSentence(prev):
		return brSentence
	}
	return brSpace
}

func endsSentence(prev []rune) bool {
	for i := len(prev) - 1; i >= 0; i-- {
		switch prev[i] {
		case ')', '"', '\'', '’', '”', '*', '_':
			continue
		case '.', '!', '?', '…', '。', '！', '？':
			return true
		}
		return false
	}
	return false
}

func endsSentenceCJK(prev []rune) bool {
	if len(prev) == 0 {
		return false
	}
	switch prev[len(prev)-1] {
	case '。', '！', '？':
		return true
	}
	return false
}

// newFence decides whether a fence can be protected under the limit and
// returns its reopen/close lines, or nil.
func (s *splitter) newFence(fl fenceLine, line string) *fence {
	markers := strings.Repeat(string(fl.char), fl.count)
	f := &fence{reopen: fl.indent + markers + fl.info, suffix: "\n" + fl.indent + markers, open: fl}
	half := s.limit / 2
	if f.overhead() > half {
		f.reopen = fl.indent + markers // drop the info string on continuation
	}
	if f.overhead() > half || runeLen(line)+runeLen(f.suffix) > half {
		return nil
	}
	return f
}

// explode cuts every unit whose body cannot fit a chunk into smaller units:
// code lines at runs of spaces first, then anything at rune boundaries that
// avoid splitting a grapheme where possible.
func (s *splitter) explode() {
	var units []unit
	for _, u := range s.units {
		// A run of ``` or ~~~ in the middle of a line must not become the start
		// of a chunk, where it would read as a fence: offer cuts inside the
		// run, in pieces of two markers.
		if u.in == nil && u.open == nil && countNL(u.sep) == 0 && len(u.body) > 0 &&
			(u.body[0] == '`' || u.body[0] == '~') {
			run := 0
			for run < len(u.body) && u.body[run] == u.body[0] {
				run++
			}
			if run >= 3 {
				for run > 2 {
					units = append(units, unit{sep: u.sep, body: u.body[:2:2], brk: u.brk})
					u = unit{body: u.body[2:], brk: brHard}
					run -= 2
				}
			}
		}
		units = append(units, u)
	}
	out := make([]unit, 0, len(units))
	for _, u := range units {
		limit := s.limit
		if u.in != nil {
			limit = (s.limit - u.in.overhead()) / 2
		}
		limit = max(limit, 1)
		if len(u.body) <= limit {
			out = append(out, u)
			continue
		}
		words := []word{{body: u.body, brk: brHard}}
		if u.in != nil {
			words = splitWords(u.body)
		}
		for wi, w := range words {
			p := w.body
			for pi := 0; len(p) > 0; pi++ {
				n := len(p)
				if n > limit {
					n = graphemeCut(p, limit)
				}
				if (wi > 0 || pi > 0) && fenceStart(p) {
					// a piece may start a chunk: keep it from reading as a fence
					n = min(n, 2)
				}
				v := unit{body: p[:n:n], brk: brHard, in: u.in, open: u.open}
				switch {
				case wi == 0 && pi == 0:
					v.sep, v.brk = u.sep, u.brk
				case pi == 0:
					v.sep, v.brk = w.sep, w.brk
					if fenceStart(v.body) { // would read as a closing fence
						v.brk = brNever
					}
				}
				out = append(out, v)
				p = p[n:]
			}
		}
	}
	s.units = out
}

type word struct {
	sep, body []rune
	brk       breakKind
}

// splitWords cuts a code line into words; leading and trailing whitespace stay
// in the first and last word's body so indentation survives a chunk start.
func splitWords(line []rune) []word {
	i := 0
	for i < len(line) && unicode.IsSpace(line[i]) {
		i++
	}
	var words []word
	start, sepStart := 0, 0
	for {
		for i < len(line) && !unicode.IsSpace(line[i]) {
			i++
		}
		j := i
		for j < len(line) && unicode.IsSpace(line[j]) {
			j++
		}
		end := i
		if j == len(line) {
			end = j // trailing whitespace stays with the last word
		}
		w := word{body: line[start:end], brk: brSpace}
		if len(words) > 0 {
			w.sep = line[sepStart:start]
		}
		words = append(words, w)
		if j >= len(line) {
			return words
		}
		sepStart, start, i = i, j, j
	}
}

// graphemeCut returns a cut position in (0, limit] that does not separate a
// rune from a following combining mark, variation selector, skin tone or
// zero-width joiner (nor a joiner from what it joins) and does not leave the
// rest starting with something that reads as a code fence; it falls back to
// any cut that avoids the fence, then to limit.
func graphemeCut(p []rune, limit int) int {
	if limit >= len(p) {
		return len(p)
	}
	for n := limit; n > limit/2 && n > 0; n-- {
		if !joins(p[n]) && p[n-1] != '\u200d' && !fenceStart(p[n:]) {
			return n
		}
	}
	for n := limit; n > 0; n-- {
		if !fenceStart(p[n:]) {
			return n
		}
	}
	return limit
}

// fenceStart reports whether p starts like a fence line (after quote markers).
func fenceStart(p []rune) bool {
	i := 0
	for i < len(p) && (p[i] == '>' || p[i] == ' ' || p[i] == '\t') {
		i++
	}
	run := 0
	for i+run < len(p) && (p[i+run] == '`' || p[i+run] == '~') && p[i+run] == p[i] {
		run++
	}
	return run >= 3
}

func joins(r rune) bool {
	return r == '\u200d' || (r >= '\ufe00' && r <= '\ufe0f') || unicode.Is(unicode.Mn, r) ||
		unicode.Is(unicode.Me, r) || (r >= 0x1F3FB && r <= 0x1F3FF) || (r >= 0xE0020 && r <= 0xE007F)
}

func runeLen(s string) int { return utf8.RuneCountInString(s) }

func countNL(r []rune) int {
	n := 0
	for _, c := range r {
		if c == '\n' {
			n++
		}
	}
	return n
}

// fakeFence reports whether the chunk made of units[i:k] would begin with a
// line that reads as a code fence although it is none in the source: a cut in
// the middle of "see ``` above", or, inside a code block, a continuation that
// starts with what would close the reopened block.
func (s *splitter) fakeFence(i, k int) bool {
	u := s.units
	if (u[i].open != nil && u[i].in == nil) || len(u[i].body) == 0 {
		return false // a real opening line
	}
	switch u[i].body[0] {
	case '`', '~', '>', ' ', '\t':
	default:
		return false
	}
	line := append([]rune(nil), u[i].body...)
	for m := i + 1; m < k && len(line) < 512; m++ {
		if countNL(u[m].sep) > 0 {
			break
		}
		line = append(append(line, u[m].sep...), u[m].body...)
	}
	if f := u[i].in; f != nil {
		fl, ok := parseFenceLine(string(line))
		return ok && fl.closes(f.open)
	}
	return fenceStart(line)
}
