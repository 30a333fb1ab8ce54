package markup

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/channels"
)

// MinLimit is the smallest chunk limit the Chunks functions honour; smaller
// limits are raised to it (an escaped character alone can take 5 units).
const MinLimit = 16

// converter turns one Markdown piece into (markup, plain).
type converter func(md string) (text, plain string)

// measureFunc counts a string the way the platform does.
type measureFunc func(s string) int

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

func runeCount(s string) int { return utf8.RuneCountInString(s) }

// chunker splits md and converts every piece, re-splitting pieces whose
// converted form does not fit.
type chunker struct {
	limit    int
	maxLines int
	conv     converter
	measure  measureFunc
	escape   func(string) string // plain text → markup, for the last-resort cut
	out      []channels.Chunk
}

func (c *chunker) run(md string) []channels.Chunk {
	c.limit = max(c.limit, MinLimit)
	// Markup is usually longer than the Markdown it comes from (tags, entities,
	// link syntax): start from a budget scaled by the whole text's expansion so
	// that few pieces need a second split, which would double their count.
	budget := c.limit
	text, plain := c.conv(md)
	if c.fits(text) && c.measure(plain) <= c.limit && strings.TrimSpace(plain) != "" {
		// One chunk holds it all (most answers): splitting would cut
		// nowhere and convert the same text again, at ~5× the allocations.
		return []channels.Chunk{{Text: text, Plain: plain}}
	}
	if size, n := max(c.measure(text), c.measure(plain)), runeCount(md); size > n && n > 0 {
		budget = max(1, int(int64(c.limit)*int64(n)*97/(int64(size)*100)))
	}
	for _, p := range splitMarkdown(md, budget, c.maxLines) {
		c.piece(p, budget)
	}
	return c.out
}

func (c *chunker) fits(s string) bool {
	if c.measure(s) > c.limit {
		return false
	}
	return c.maxLines <= 0 || strings.Count(s, "\n")+1 <= c.maxLines
}

// piece converts one Markdown piece that was split with the given budget.
func (c *chunker) piece(md string, budget int) {
	text, plain := c.conv(md)
	if strings.TrimSpace(plain) == "" {
		return // nothing visible (e.g. only a link definition)
	}
	if c.measure(text) <= c.limit && c.measure(plain) <= c.limit {
		if c.fits(text) || budget <= 1 || !c.retry(md, budget, 0) {
			c.out = append(c.out, channels.Chunk{Text: text, Plain: plain})
		}
		return
	}
	size := max(c.measure(text), c.measure(plain))
	if !c.retry(md, budget, size) {
		c.cutPlain(plain)
	}
}

// retry re-splits md with a smaller budget; it reports false when the piece
// cannot be split further.
func (c *chunker) retry(md string, budget, size int) bool {
	n := runeCount(md)
	nb := min(budget-1, n-1)
	if size > 0 {
		nb = min(nb, int(int64(budget)*int64(c.limit)*95/(int64(size)*100)))
	}
	if nb < 1 {
		return false
	}
	parts := splitMarkdown(md, nb, c.maxLines)
	if len(parts) == 1 && parts[0] == strings.TrimSpace(md) && size == 0 {
		return false // only the line limit failed and no cut helps
	}
	for _, p := range parts {
		c.piece(p, nb)
	}
	return true
}

// cutPlain is the last resort: escaped plain text cut to the limit, which is
// valid markup in every dialect.
func (c *chunker) cutPlain(plain string) {
	var cur []rune
	flush := func() {
		if s := strings.TrimSpace(string(cur)); s != "" {
			c.out = append(c.out, channels.Chunk{Text: c.escape(s), Plain: s})
		}
		cur = cur[:0]
	}
	for _, r := range plain {
		next := string(append(cur, r))
		if len(cur) > 0 && (c.measure(c.escape(next)) > c.limit || c.measure(next) > c.limit) {
			flush()
		}
		cur = append(cur, r)
	}
	flush()
}
