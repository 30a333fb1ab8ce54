package channeltest

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/switchboard-bot/switchboard/channels"
)

// marker is a word of the long answer that must survive Format exactly
// once, in order: a paragraph's first word, or a code line's first word
// (which must then be inside a code block of its chunk).
type marker struct {
	text string
	code bool
}

// longAnswer builds an ASCII Markdown answer of about 2.5 times the
// limit: short paragraphs and small code blocks, one paragraph and one code
// block each longer than a chunk, which Format must cut (the paragraph
// between words, the code block closed and reopened across chunks).
func longAnswer(c Capabilities) (string, []marker) {
	var b strings.Builder
	var markers []marker
	para, blk := 0, 0
	paragraph := func(words int) {
		para++
		m := fmt.Sprintf("para%05d", para)
		markers = append(markers, marker{text: m})
		b.WriteString(m)
		for i := 1; i <= words; i++ {
			if i%10 == 0 {
				w := fmt.Sprintf("word%05d", i)
				markers = append(markers, marker{text: w})
				b.WriteString(" " + w)
				continue
			}
			b.WriteString(" lorem")
		}
		b.WriteString(".\n\n")
	}
	code := func(lines int) {
		blk++
		b.WriteString("```go\n")
		for l := 1; l <= lines; l++ {
			m := fmt.Sprintf("blk%03dline%05d", blk, l)
			markers = append(markers, marker{text: m, code: true})
			fmt.Fprintf(&b, "%s := %d\n", m, l)
		}
		b.WriteString("```\n\n")
	}
	const small = 6 // lines: fits a chunk of MaxLines 17 with its fences and a paragraph
	for b.Len() < c.MaxChunk/2 {
		paragraph(24)
		code(small)
	}
	paragraph(c.MaxChunk * 12 / 10 / 6) // one line; a word is about 6 characters
	code(c.MaxChunk*13/10/24 + 1)       // a code line is about 24 characters
	for b.Len() < c.MaxChunk*5/2 {
		paragraph(24)
		code(small)
	}
	paragraph(24)
	return b.String(), markers
}

// markerRE finds the markers longAnswer writes.
var markerRE = regexp.MustCompile(`para\d{5}|word\d{5}|blk\d{3}line\d{5}`)

// chunkProblems checks every chunk against the limits, that each code
// block opened in a chunk is closed in it, that code lines are inside code
// blocks, and that every marker appears once, in order; it returns what is
// wrong.
func chunkProblems(c Capabilities, chunks []channels.Chunk, markers []marker) []string {
	var problems []string
	errorf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	code := make(map[string]bool, len(markers))
	for _, m := range markers {
		code[m.text] = m.code
	}
	var seen []string
	for i, ch := range chunks {
		n := i + 1
		if l := len([]rune(ch.Text)); l > c.MaxChunk {
			errorf("chunk %d of %d has %d characters, over the limit of %d", n, len(chunks), l, c.MaxChunk)
		}
		if l := len([]rune(ch.Plain)); l > c.MaxChunk {
			errorf("chunk %d of %d has %d characters of plain text, over the limit of %d", n, len(chunks), l, c.MaxChunk)
		}
		if lines := strings.Count(ch.Text, "\n") + 1; c.MaxLines > 0 && lines > c.MaxLines {
			errorf("chunk %d of %d has %d lines, over the limit of %d", n, len(chunks), lines, c.MaxLines)
		}
		if strings.TrimSpace(ch.Plain) == "" {
			errorf("chunk %d of %d has no plain text", n, len(chunks))
		}
		regions, err := codeRegions(ch.Text, c.CodeBlocks)
		if err != nil {
			errorf("chunk %d of %d: %v:\n%s", n, len(chunks), err, clip(ch.Text))
		}
		for _, loc := range markerRE.FindAllStringIndex(ch.Text, -1) {
			m := ch.Text[loc[0]:loc[1]]
			seen = append(seen, m)
			if err == nil && inside(regions, loc[0]) != code[m] {
				where := "outside"
				if code[m] {
					where = "inside"
				}
				errorf("chunk %d of %d: %q should be %s a code block:\n%s", n, len(chunks), m, where, clip(ch.Text))
			}
		}
	}
	for i, m := range markers {
		switch {
		case i >= len(seen):
			errorf("the chunks end before %q: %d of %d parts of the answer were lost", m.text, len(markers)-i, len(markers))
			return problems
		case seen[i] != m.text:
			errorf("the chunks hold %q where %q of the answer belongs: a part was lost, repeated or moved", seen[i], m.text)
			return problems
		}
	}
	if len(seen) > len(markers) {
		errorf("the chunks repeat %d part(s) of the answer", len(seen)-len(markers))
	}
	return problems
}

// codeRegions returns the [start, end) byte ranges of the code blocks in a
// chunk's markup, or an error when a code block is left open.
func codeRegions(text string, style CodeStyle) ([][2]int, error) {
	var regions [][2]int
	switch style {
	case HTMLPre:
		rest, off := text, 0
		for {
			open := strings.Index(rest, "<pre")
			closing := strings.Index(rest, "</pre>")
			switch {
			case open < 0 && closing < 0:
				return regions, nil
			case open < 0 || (closing >= 0 && closing < open):
				return nil, fmt.Errorf("a </pre> closes no <pre>")
			case closing < 0:
				return nil, fmt.Errorf("a <pre> code block is left open")
			}
			if next := strings.Index(rest[open+4:], "<pre"); next >= 0 && open+4+next < closing {
				return nil, fmt.Errorf("a <pre> opens inside another")
			}
			regions = append(regions, [2]int{off + open, off + closing})
			off += closing + len("</pre>")
			rest = text[off:]
		}
	default:
		var at []int
		for i := 0; ; {
			j := strings.Index(text[i:], "```")
			if j < 0 {
				break
			}
			at = append(at, i+j)
			i += j + 3
		}
		if len(at)%2 != 0 {
			return nil, fmt.Errorf("a ``` code block is left open (%d fences)", len(at))
		}
		for i := 0; i < len(at); i += 2 {
			regions = append(regions, [2]int{at[i], at[i+1]})
		}
		return regions, nil
	}
}

func inside(regions [][2]int, at int) bool {
	for _, r := range regions {
		if at > r[0] && at < r[1] {
			return true
		}
	}
	return false
}

func clip(s string) string {
	if len(s) <= 600 {
		return s
	}
	return s[:300] + "\n…\n" + s[len(s)-300:]
}
