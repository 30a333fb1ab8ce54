package channeltest

import (
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
)

// The long-answer check finds each way a splitter can fail, in either code
// style, and passes a correct split.
func TestChunkProblems(t *testing.T) {
	caps := Capabilities{MaxChunk: 60, MaxLines: 5}
	markers := []marker{{text: "para00001"}, {text: "blk001line00001", code: true}, {text: "blk001line00002", code: true}, {text: "para00002"}}
	fenced := func(texts ...string) []channels.Chunk {
		var out []channels.Chunk
		for _, s := range texts {
			out = append(out, channels.Chunk{Text: s, Plain: strings.ReplaceAll(s, "```", "")})
		}
		return out
	}
	for _, tt := range []struct {
		name   string
		style  CodeStyle
		chunks []channels.Chunk
		want   string // "" = no problem
	}{
		{"a correct split", Fenced, fenced("para00001 lorem.\n```go\nblk001line00001 := 1\n```", "```go\nblk001line00002 := 2\n```\npara00002."), ""},
		{"a fence left open", Fenced, fenced("para00001 lorem.\n```go\nblk001line00001 := 1", "blk001line00002 := 2\n```\npara00002."), "left open"},
		{"code outside a block", Fenced, fenced("para00001 lorem.\n```go\n```\nblk001line00001 := 1", "```go\nblk001line00002 := 2\n```\npara00002."), "should be inside a code block"},
		{"a part lost", Fenced, fenced("para00001 lorem.\n```go\nblk001line00001 := 1\n```", "para00002."), "where \"blk001line00002\" of the answer belongs"},
		{"a part repeated", Fenced, fenced("para00001 lorem.\n```go\nblk001line00001 := 1\n```", "```go\nblk001line00001 := 1\nblk001line00002 := 2\n```\npara00002."), "where \"blk001line00002\" of the answer belongs"},
		{"the end lost", Fenced, fenced("para00001 lorem.\n```go\nblk001line00001 := 1\nblk001line00002 := 2\n```"), "1 of 4 parts of the answer were lost"},
		{"over the limit", Fenced, fenced("para00001 lorem.\n```go\nblk001line00001 := 1\nblk001line00002 := 2\n```\npara00002."), "over the limit of 60"},
		{"too many lines", Fenced, fenced("para00001\n```go\nblk001line00001\n```\n\n", "```go\nblk001line00002\n```\npara00002"), "over the limit of 5"},
		{"a correct HTML split", HTMLPre, []channels.Chunk{
			{Text: "para00001.\n<pre><code>blk001line00001 := 1</code></pre>", Plain: "x"},
			{Text: "<pre>blk001line00002 := 2</pre>\npara00002.", Plain: "x"},
		}, ""},
		{"an open <pre>", HTMLPre, []channels.Chunk{
			{Text: "para00001 lorem.\n<pre><code>blk001line00001 := 1", Plain: "x"},
			{Text: "blk001line00002 := 2</code></pre>\npara00002.", Plain: "x"},
		}, "left open"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := caps
			c.CodeBlocks = tt.style
			got := strings.Join(chunkProblems(c, tt.chunks, markers), "\n")
			switch {
			case tt.want == "" && got != "":
				t.Errorf("problems in a correct split:\n%s", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("problems = %q, want one saying %q", got, tt.want)
			}
		})
	}
}

// The long answer is long enough to be split, holds a code block longer
// than a chunk, and its markers are what its text says, in order.
func TestLongAnswer(t *testing.T) {
	caps := Capabilities{MaxChunk: 2000}
	md, markers := longAnswer(caps)
	if len(md) < caps.MaxChunk*5/2 {
		t.Errorf("the answer has %d characters, want at least %d", len(md), caps.MaxChunk*5/2)
	}
	found := markerRE.FindAllString(md, -1)
	if len(found) != len(markers) {
		t.Fatalf("the answer holds %d markers, longAnswer lists %d", len(found), len(markers))
	}
	for i, m := range markers {
		if found[i] != m.text {
			t.Fatalf("marker %d is %q in the text, %q in the list", i, found[i], m.text)
		}
	}
	if p := chunkProblems(Capabilities{MaxChunk: len(md) + 1, CodeBlocks: Fenced}, []channels.Chunk{{Text: md, Plain: md}}, markers); len(p) > 0 {
		t.Errorf("the unsplit answer has problems: %q", p)
	}
}
