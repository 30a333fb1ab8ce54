package config

import (
	"bytes"
	"strings"
)

// Where a YAML syntax error starts.
//
// The YAML library reports where it noticed a problem, which for two common
// mistakes is far from the cause: a quote left open on line 21 is closed by
// the next quote in the file and reported there (or at the mapping that
// holds it), and a tab used for indentation may be reported without a line.
// When parsing fails, yamlHint looks for those two causes in the text and,
// if it finds one, reports its line and column with a hint, keeping the
// parser's own words (without its line) at the end. Other parser errors are
// placed by placeSyntaxError (yamlplace.go).

// yamlHint returns an *Error for a syntax error in data that yamlError could
// place better, or nil. parserLine is the line the parser reported (0 when
// none), parserMsg its message.
func yamlHint(file string, data []byte, parserLine int, parserMsg string) *Error {
	// The parser's line is left out: the hint names the line of the cause,
	// and one message shows one line number.
	said := "the YAML parser says: " + parserMsg
	lines := bytes.Split(data, []byte("\n"))
	if strings.Contains(parserMsg, "tab") || strings.Contains(parserMsg, "cannot start any token") || parserLine == 0 {
		if l, c := firstIndentTab(lines); l > 0 {
			return &Error{File: file, Line: l, Col: c, Msg: "invalid YAML: a tab character indents this line; YAML indentation must use spaces (replace the tab with spaces) (" + said + ")"}
		}
	}
	if l, c, q := firstOpenQuote(lines); l > 0 {
		return &Error{File: file, Line: l, Col: c, Msg: "invalid YAML: the value quoted with " + q + " that starts here is not closed on this line (add the closing " + q + ") (" + said + ")"}
	}
	return nil
}

// firstIndentTab finds the first line whose indentation holds a tab.
func firstIndentTab(lines [][]byte) (line, col int) {
	for i, l := range lines {
		for j, b := range l {
			if b == '\t' {
				if rest := bytes.TrimSpace(l[j:]); len(rest) == 0 || rest[0] == '#' {
					break // a blank or comment line: harmless
				}
				return i + 1, j + 1
			}
			if b != ' ' {
				break
			}
		}
	}
	return 0, 0
}

// firstOpenQuote finds the first "key: value" or "- value" line whose value
// starts with a quote that the line does not close. (A quoted value may span
// lines in YAML; config files hardly ever do, and this runs only after the
// parser has already failed.)
func firstOpenQuote(lines [][]byte) (line, col int, quote string) {
	inBlock, blockIndent := false, 0
	for i, raw := range lines {
		l := string(raw)
		trimmed := strings.TrimLeft(l, " ")
		indent := len(l) - len(trimmed)
		if inBlock {
			if strings.TrimSpace(trimmed) == "" || indent > blockIndent {
				continue // block scalar content: quotes mean nothing
			}
			inBlock = false
		}
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		rest, off := trimmed, indent
		for strings.HasPrefix(rest, "- ") {
			rest, off = rest[2:], off+2
		}
		if k := keyEnd(rest); k > 0 {
			v := strings.TrimLeft(rest[k:], " ")
			off += len(rest) - len(v)
			rest = v
		}
		if strings.HasPrefix(rest, "|") || strings.HasPrefix(rest, ">") {
			inBlock, blockIndent = true, indent
			continue
		}
		if rest == "" || (rest[0] != '"' && rest[0] != '\'') {
			continue
		}
		if !closes(rest) {
			return i + 1, off + 1, string(rest[0])
		}
	}
	return 0, 0, ""
}

// keyEnd returns the index just after "key:" when s starts with a plain
// key followed by ": " or ":" at the end, else 0.
func keyEnd(s string) int {
	if s == "" || s[0] == '"' || s[0] == '\'' || s[0] == '[' || s[0] == '{' {
		return 0
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ':':
			if i+1 == len(s) || s[i+1] == ' ' {
				return i + 1
			}
		case '#', '"', '\'':
			return 0
		}
	}
	return 0
}

// closes reports whether the quoted scalar at the start of s ends on s.
func closes(s string) bool {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case q == '"' && s[i] == '\\':
			i++
		case s[i] == q:
			if q == '\'' && i+1 < len(s) && s[i+1] == '\'' {
				i++ // '' is an escaped quote
				continue
			}
			return true
		}
	}
	return false
}
