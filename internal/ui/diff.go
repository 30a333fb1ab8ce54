package ui

import "strings"

// diffLine is one line of a unified-style diff.
type diffLine struct {
	Op   string // " ", "+", "-", "…"
	Text string
	A, B int // the line's number in the old and the new text (0: not in it)
}

// maxDiffLines bounds the inputs of lineDiff (the table is quadratic).
const maxDiffLines = 4000

// lineDiff compares a and b by lines (longest common subsequence) and keeps
// context lines around the changes. Inputs too long to compare come back as
// one removal and one addition of everything.
func lineDiff(a, b string, context int) []diffLine {
	x, y := splitLines(a), splitLines(b)
	if len(x) > maxDiffLines || len(y) > maxDiffLines || len(x)*len(y) > 4_000_000 {
		out := make([]diffLine, 0, len(x)+len(y))
		for i, l := range x {
			out = append(out, diffLine{Op: "-", Text: l, A: i + 1})
		}
		for j, l := range y {
			out = append(out, diffLine{Op: "+", Text: l, B: j + 1})
		}
		return out
	}
	// lcs[i][j] is the LCS length of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var all []diffLine
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			all = append(all, diffLine{Op: " ", Text: x[i], A: i + 1, B: j + 1})
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			all = append(all, diffLine{Op: "-", Text: x[i], A: i + 1})
			i++
		default:
			all = append(all, diffLine{Op: "+", Text: y[j], B: j + 1})
			j++
		}
	}
	return withContext(all, context)
}

// withContext keeps changed lines and up to n unchanged lines around them.
func withContext(all []diffLine, n int) []diffLine {
	keep := make([]bool, len(all))
	for i, l := range all {
		if l.Op == " " {
			continue
		}
		for k := max(0, i-n); k <= min(len(all)-1, i+n); k++ {
			keep[k] = true
		}
	}
	var out []diffLine
	skipped := false
	for i, l := range all {
		if !keep[i] {
			skipped = true
			continue
		}
		if skipped {
			out = append(out, diffLine{Op: "…"})
		}
		skipped = false
		out = append(out, l)
	}
	if skipped && len(out) > 0 {
		out = append(out, diffLine{Op: "…"})
	}
	return out
}

func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
