package config

import (
	"bytes"
	"regexp"

	"go.yaml.in/yaml/v3"
)

// What ParseLenient keeps of a file that is not valid YAML.
//
// The file is split into its top-level blocks: a line at column 0 that
// holds a key ("server:", "llm: {…}") starts one, and every other line
// (indented lines, comments, blank lines, a list's "- " items written at
// column 0, a closing bracket) belongs to the block above it. Each block is
// parsed on its own, so a syntax error in llm: leaves server: and bot:
// readable; a block that does not parse keeps its lines above the first one
// at which it fails. When no block gives anything, the lines of the whole
// file above its first failing line are tried (a file that does not split
// into blocks, e.g. one whose first line is broken).

// blockStart matches a line that starts a top-level block: a plain or
// quoted key at column 0, then ':' and a space, a tab or the end of line.
var blockStart = regexp.MustCompile(`^(?:[A-Za-z_][A-Za-z0-9_.-]*|"[^"\n]*"|'[^'\n]*')[ \t]*:(?:[ \t\r\n]|$)`)

// textBlock is one top-level block: first is the line number (1-based) of
// its first line.
type textBlock struct {
	first int
	text  []byte
}

// topLevelBlocks splits data into its top-level blocks (lines before the
// first key form a block of their own).
func topLevelBlocks(data []byte) []textBlock {
	var blocks []textBlock
	start, first := 0, 1
	for line, off := 1, 0; off < len(data); line++ {
		end := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			end = off + i + 1
		}
		if off > start && blockStart.Match(data[off:end]) {
			blocks = append(blocks, textBlock{first: first, text: data[start:off]})
			start, first = off, line
		}
		off = end
	}
	if start < len(data) {
		blocks = append(blocks, textBlock{first: first, text: data[start:]})
	}
	return blocks
}

// salvageYAML returns a mapping of the top-level keys of data that parse
// (see above); nil when nothing does.
func salvageYAML(data []byte) *yaml.Node {
	if bytes.Count(data, []byte("\n")) > maxPlaceLines {
		return parsedPrefix(data, 1)
	}
	merged := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, b := range topLevelBlocks(data) {
		if root := parsedBlock(b); root != nil {
			merged.Content = append(merged.Content, root.Content...)
		}
	}
	if len(merged.Content) > 0 {
		return merged
	}
	return parsedPrefix(data, 1)
}

// parsedBlock parses one block at its place in the file (so the lines the
// decoder records are the file's), or failing that the block's lines above
// the first one at which it fails; nil when neither parses to a mapping.
func parsedBlock(b textBlock) *yaml.Node {
	if root, err := parseYAML("", padLines(b.text, b.first)); err == nil {
		return root
	}
	return parsedPrefix(b.text, b.first)
}

// parsedPrefix parses the lines of text (whose first line is line first of
// the file) above the first one at which text fails to parse; nil when
// there are none or they do not parse.
func parsedPrefix(text []byte, first int) *yaml.Node {
	raw := rawParseError(text)
	if raw == "" {
		return nil
	}
	n := firstFailingLine(text, raw)
	if n <= 1 {
		return nil
	}
	end := 0
	for i := 1; i < n; i++ {
		end += bytes.IndexByte(text[end:], '\n') + 1
	}
	root, err := parseYAML("", padLines(text[:end], first))
	if err != nil {
		return nil
	}
	return root
}

// padLines puts text at line first by prefixing blank lines.
func padLines(text []byte, first int) []byte {
	if first <= 1 {
		return text
	}
	return append(bytes.Repeat([]byte("\n"), first-1), text...)
}
