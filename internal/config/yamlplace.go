package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The line of a YAML parser error.
//
// The YAML library reports its parser's errors (as opposed to its scanner's)
// at a 0-based line, and at the line of the construct that holds the problem
// rather than the problem's own: an unclosed "[" on line 25 is reported as
// "line 24", a key indented one space too little below a list as the line
// where the enclosing mapping starts. placeSyntaxError finds the first line
// at which the text fails the way the whole file does (the shortest prefix of
// the file that gives the parser's very error) and, for an unclosed flow
// collection, the column of its opening bracket.

// parserProblems start the messages of the YAML parser (not the scanner).
var parserProblems = []string{"did not find expected", "found undefined tag handle", "found duplicate %", "found incompatible YAML document"}

func isParserProblem(msg string) bool {
	for _, p := range parserProblems {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// maxPlaceLines bounds the prefix search (one parse per line): a real
// config.yaml has a few hundred lines.
const maxPlaceLines = 5000

// placeSyntaxError returns an *Error for the parser error raw (the library's
// text, "yaml: line N: …") in data, placed at the line that causes it, or
// nil when it is not a parser error.
func placeSyntaxError(file string, data []byte, raw string, parserLine int, msg string) *Error {
	if !isParserProblem(msg) {
		return nil
	}
	line := firstFailingLine(data, raw)
	if line == 0 && parserLine > 0 {
		line = parserLine + 1 // at least the holding construct, counted from 1
	}
	if line == 0 {
		return nil
	}
	said := " (the YAML parser says: " + msg + ")"
	if kind, open, close, ok := flowProblem(msg); ok {
		// The parser names the opening bracket's line (0-based) unless it
		// is the first; else it is on the first failing line or above it.
		candidates := []int{parserLine + 1}
		for l := line; l >= 1; l-- {
			candidates = append(candidates, l)
		}
		for _, l := range candidates {
			if col := unclosedOpener(lineAt(data, l), open); col > 0 {
				return &Error{File: file, Line: l, Col: col,
					Msg: fmt.Sprintf("invalid YAML: the %s opened with %c here is not closed (add the closing %c)%s", kind, open, close, said)}
			}
		}
		return &Error{File: file, Line: line, Msg: fmt.Sprintf("invalid YAML: a %s opened with %c on this line or before it is not closed (add the closing %c)%s", kind, open, close, said)}
	}
	m := "invalid YAML: " + msg
	switch {
	case strings.HasPrefix(msg, "did not find expected key"), strings.HasPrefix(msg, "did not find expected '-' indicator"):
		m += " (check this line's indentation against the keys or list items above it)"
	}
	return &Error{File: file, Line: line, Msg: m}
}

// flowProblem recognizes an unclosed flow sequence ("[") or mapping ("{").
func flowProblem(msg string) (kind string, open, close byte, ok bool) {
	switch {
	case strings.HasPrefix(msg, "did not find expected ',' or ']'"):
		return "list", '[', ']', true
	case strings.HasPrefix(msg, "did not find expected ',' or '}'"):
		return "mapping", '{', '}', true
	}
	return "", 0, 0, false
}

// firstFailingLine is the number of the first line such that the file up to
// and including it fails to parse with exactly raw; 0 when none does (or the
// file is too long to search).
func firstFailingLine(data []byte, raw string) int {
	if bytes.Count(data, []byte("\n")) > maxPlaceLines {
		return 0
	}
	end := 0
	for n := 1; end < len(data); n++ {
		next := bytes.IndexByte(data[end:], '\n')
		if next < 0 {
			end = len(data)
		} else {
			end += next + 1
		}
		if rawParseError(data[:end]) == raw {
			return n
		}
	}
	return 0
}

// rawParseError is the library's error text for the first document of data
// ("" when it parses).
func rawParseError(data []byte) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return err.Error()
	}
	return ""
}

// lineAt returns line n (1-based) of data.
func lineAt(data []byte, n int) string {
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(data, '\n')
		if j < 0 {
			return ""
		}
		data = data[j+1:]
	}
	if j := bytes.IndexByte(data, '\n'); j >= 0 {
		data = data[:j]
	}
	return string(data)
}

// unclosedOpener returns the column (1-based) of the first open bracket on
// line that the line does not close, skipping quoted text and comments; 0
// when there is none.
func unclosedOpener(line string, open byte) int {
	var stack []int // columns of the open brackets
	var kinds []byte
	for i := 0; i < len(line); i++ {
		switch c := line[i]; c {
		case '"', '\'':
			if i > 0 && line[i-1] != ' ' && line[i-1] != '[' && line[i-1] != '{' && line[i-1] != ',' && line[i-1] != ':' {
				continue // a quote inside a plain scalar is text
			}
			j := i + 1
			for j < len(line) && line[j] != c {
				if c == '"' && line[j] == '\\' {
					j++
				}
				j++
			}
			i = j
		case '#':
			if i == 0 || line[i-1] == ' ' {
				i = len(line)
			}
		case '[', '{':
			stack, kinds = append(stack, i+1), append(kinds, c)
		case ']', '}':
			if len(stack) > 0 {
				stack, kinds = stack[:len(stack)-1], kinds[:len(kinds)-1]
			}
		}
	}
	for k, col := range stack {
		if kinds[k] == open {
			return col
		}
	}
	return 0
}
