package markup

import (
	"strings"
	"unicode"
)

// pack distributes units over chunks: for each chunk it collects every cut
// that fits and takes the best-ranked one that still fills at least half of
// the fullest fitting chunk.
func (s *splitter) pack() []piece {
	pk := newPacker(s)
	n := len(s.units)
	var cands []packCand
	for i := 0; i < n; {
		var all bool
		cands, all = pk.candidates(i, cands[:0])
		if all {
			pk.emit(i, n)
			break
		}
		best := bestCut(cands, true)
		if best < 0 {
			best = bestCut(cands, false)
		}
		if best < 0 {
			best = i + 1 // one unit that does not fit: emit's safety net cuts it
		}
		pk.emit(i, best)
		i = best
	}
	return pk.chunks
}

// packer is pack's working state: prefix sums that size any run of units in
// constant time, and the chunks emitted so far.
type packer struct {
	s      *splitter
	u      []unit
	cum    []int // cum[k]: runes of sep+body of units[:k]
	nls    []int // nls[k]: newlines in them
	chunks []piece
}

// packCand is a cut that fits: the chunk ends before units[k].
type packCand struct {
	k, runes int
	brk      breakKind
	lineOK   bool
}

func newPacker(s *splitter) *packer {
	u := s.units
	n := len(u)
	pk := &packer{s: s, u: u, cum: make([]int, n+1), nls: make([]int, n+1)}
	for k := range u {
		pk.cum[k+1] = pk.cum[k] + len(u[k].sep) + len(u[k].body)
		pk.nls[k+1] = pk.nls[k] + countNL(u[k].sep) + countNL(u[k].body)
	}
	return pk
}

// measure returns the size of the chunk made of units[i:k].
func (pk *packer) measure(i, k int) (runes, lines, suffix int) {
	u := pk.u
	runes = pk.cum[k] - pk.cum[i] - len(u[i].sep)
	lines = 1 + pk.nls[k] - pk.nls[i] - countNL(u[i].sep)
	if f := u[i].in; f != nil {
		runes += runeLen(f.reopen) + 1
		lines++
	}
	if f := u[k-1].open; f != nil {
		suffix = runeLen(f.suffix)
		runes += suffix
		lines++
	}
	return runes, lines, suffix
}

// candidates appends to cands every cut that fits a chunk starting at
// units[i]. all reports that the whole rest fits (within the line limit too),
// in which case cands is incomplete and not needed.
func (pk *packer) candidates(i int, cands []packCand) (_ []packCand, all bool) {
	s, u, n := pk.s, pk.u, len(pk.u)
	for k := i + 1; k <= n; k++ {
		runes, lines, suffix := pk.measure(i, k)
		if runes-suffix > s.limit {
			break // no later cut can fit either
		}
		if runes > s.limit || s.fakeFence(i, k) {
			continue
		}
		lineOK := s.maxLines <= 0 || lines <= s.maxLines
		if k == n && lineOK {
			return cands, true
		}
		brk := brPara // the end of the text is the best cut there is
		if k < n {
			brk = u[k].brk
			if brk > brNever && s.fakeFence(k, n) {
				brk = brNever // the next chunk could not start here cleanly
			}
		}
		cands = append(cands, packCand{k: k, runes: runes, brk: brk, lineOK: lineOK})
	}
	return cands, false
}

// bestCut picks the best-ranked cut among cands that fills at least half of
// the fullest one, the latest on a tie; with needLines only cuts within the
// line limit count. It returns -1 when none qualifies.
func bestCut(cands []packCand, needLines bool) int {
	fill := 0
	for _, c := range cands {
		if c.lineOK || !needLines {
			fill = max(fill, c.runes)
		}
	}
	for p := brPara; p >= brHard; p-- {
		for ci := len(cands) - 1; ci >= 0; ci-- {
			c := cands[ci]
			if c.brk == p && (c.lineOK || !needLines) && 2*c.runes >= fill {
				return c.k
			}
		}
	}
	for ci := len(cands) - 1; ci >= 0; ci-- { // only "never" cuts fit
		if cands[ci].lineOK || !needLines {
			return cands[ci].k
		}
	}
	return -1
}

// emit appends the chunk made of units[i:k], unless it is empty.
func (pk *packer) emit(i, k int) {
	p := pk.assemble(i, k)
	if strings.TrimSpace(p.body) == "" && p.prefix == "" && p.suffix == "" {
		return
	}
	if runeLen(p.String()) <= pk.s.limit {
		pk.chunks = append(pk.chunks, p)
		return
	}
	// Safety net (a mis-sized unit): never exceed the limit; give up the
	// fence lines and cut the body itself.
	body := []rune(strings.TrimSpace(p.body))
	for len(body) > 0 {
		cut := graphemeCut(body, pk.s.limit)
		if part := strings.TrimSpace(string(body[:cut])); part != "" {
			pk.chunks = append(pk.chunks, piece{body: part})
		}
		body = body[cut:]
	}
}

// assemble joins units[i:k] with the fence lines that reopen and close a
// code block cut across chunks.
func (pk *packer) assemble(i, k int) piece {
	u := pk.u
	var p piece
	if f := u[i].in; f != nil {
		p.prefix = f.reopen + "\n"
	}
	var b strings.Builder
	b.WriteString(string(u[i].body))
	for m := i + 1; m < k; m++ {
		b.WriteString(string(u[m].sep))
		b.WriteString(string(u[m].body))
	}
	if f := u[k-1].open; f != nil {
		p.suffix = f.suffix
	}
	p.body = b.String()
	if p.suffix == "" {
		p.body = strings.TrimRightFunc(p.body, unicode.IsSpace)
	}
	return p
}
