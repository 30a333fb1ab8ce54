package markup

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// longAnswer builds a ~10,000 character answer with prose, lists and several
// code blocks, one of them longer than 4096 characters.
func longAnswer() string {
	var b strings.Builder
	b.WriteString("# Report\n\nHere is the analysis you asked for. It covers three parts.\n\n")
	for sec := 1; b.Len() < 10000; sec++ {
		fmt.Fprintf(&b, "## Part %d\n\n", sec)
		for p := 0; p < 3; p++ {
			fmt.Fprintf(&b, "Paragraph %d.%d explains a detail in plain words. It has a second sentence, and a third one too! ", sec, p)
			b.WriteString("Numbers & symbols <like these> must survive.\n\n")
		}
		fmt.Fprintf(&b, "- item %d\n  - nested %d\n\n", sec, sec)
		fmt.Fprintf(&b, "```go\n// block %d\nfunc part%d() {\n", sec, sec)
		lines := 5
		if sec == 2 {
			lines = 140 // longer than one chunk
		}
		for l := 0; l < lines; l++ {
			fmt.Fprintf(&b, "\tfmt.Println(\"line %d of part %d\")\n", l, sec)
		}
		b.WriteString("}\n```\n\n")
	}
	b.WriteString("That is all.")
	return b.String()
}

func fenceLines(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			n++
		}
	}
	return n
}

// checkPieces asserts the splitting contract on md: limit, no empty chunk,
// order and content kept, fences balanced.
func checkPieces(t *testing.T, md string, limit int) []string {
	t.Helper()
	pieces := splitPieces(md, limit, 0)
	chunks := Split(md, limit)
	if len(chunks) != len(pieces) {
		t.Fatalf("Split returned %d chunks, pieces %d", len(chunks), len(pieces))
	}
	rest := md
	var kept strings.Builder
	for i, c := range chunks {
		if n := utf8.RuneCountInString(c); n > limit {
			t.Errorf("chunk %d: %d runes > %d", i, n, limit)
		}
		if strings.TrimSpace(c) == "" {
			t.Errorf("chunk %d empty", i)
		}
		if !utf8.ValidString(c) {
			t.Errorf("chunk %d invalid UTF-8", i)
		}
		if openFenceAtEnd(c) {
			t.Errorf("chunk %d leaves a fence open:\n%s", i, c)
		}
		// bodies are stretches of the source, in order
		j := strings.Index(rest, pieces[i].body)
		if j < 0 {
			t.Fatalf("chunk %d body is not in the remaining source (order or content broken):\n%q", i, pieces[i].body)
		}
		rest = rest[j+len(pieces[i].body):]
		kept.WriteString(pieces[i].body)
	}
	if nonSpace(kept.String()) != nonSpace(md) {
		t.Errorf("content lost or changed")
	}
	return chunks
}

func TestSplitLongAnswer(t *testing.T) {
	md := longAnswer()
	if n := utf8.RuneCountInString(md); n < 10000 {
		t.Fatalf("fixture too short: %d", n)
	}
	chunks := checkPieces(t, md, 4096)
	if len(chunks) < 3 {
		t.Fatalf("want at least 3 chunks, got %d", len(chunks))
	}
	for i, c := range chunks {
		if fenceLines(c)%2 != 0 {
			t.Errorf("chunk %d has %d ``` lines:\n%s", i, fenceLines(c), c)
		}
		if utf8.RuneCountInString(c) < 4096/2 && i != len(chunks)-1 {
			t.Errorf("chunk %d is needlessly small: %d runes", i, utf8.RuneCountInString(c))
		}
	}
	// The cut through the long block reopens it with its language.
	reopened := 0
	for _, c := range chunks[1:] {
		if strings.HasPrefix(c, "```go\n\tfmt.Println") {
			reopened++
		}
	}
	if reopened == 0 {
		t.Errorf("no chunk reopens the long go block")
	}
}

func TestSplitPrefersBetterBreaks(t *testing.T) {
	para := strings.Repeat("a", 30)
	tests := []struct {
		name  string
		md    string
		limit int
		want  []string
	}{
		{"paragraph over line", para + "\nline two\n\n" + para, 50,
			[]string{para + "\nline two", para}},
		{"line over sentence", "First sentence here. Second one\nthird line is here", 40,
			[]string{"First sentence here. Second one", "third line is here"}},
		{"sentence over space", "One two three four. Five six seven eight nine", 30,
			[]string{"One two three four.", "Five six seven eight nine"}},
		{"space over hard", "alpha beta gamma delta epsilon", 12,
			[]string{"alpha beta", "gamma delta", "epsilon"}},
		{"hard cut in a long word", strings.Repeat("x", 25), 10,
			[]string{strings.Repeat("x", 10), strings.Repeat("x", 10), strings.Repeat("x", 5)}},
		{"CJK sentence without spaces", "这是第一句。这是第二句话。", 8,
			[]string{"这是第一句。", "这是第二句话。"}},
		{"fits whole", "  short text\n\n", 100, []string{"short text"}},
		{"no limit", "a\n\nb", 0, []string{"a\n\nb"}},
		{"empty", " \n\t ", 10, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Split(tc.md, tc.limit)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Split(%q, %d)\n got %q\nwant %q", tc.md, tc.limit, got, tc.want)
			}
		})
	}
}

func TestSplitSingleLineLongerThanLimit(t *testing.T) {
	line := strings.Repeat("word ", 300) + strings.Repeat("z", 250)
	chunks := checkPieces(t, line, 100)
	if len(chunks) < 16 {
		t.Errorf("got %d chunks", len(chunks))
	}
	for i, c := range chunks[:len(chunks)-4] {
		if strings.HasPrefix(c, " ") || strings.HasSuffix(c, " ") || strings.Contains(c, "wor\n") {
			t.Errorf("chunk %d cut badly: %q", i, c)
		}
		if !strings.HasSuffix(c, "word") {
			t.Errorf("chunk %d does not end at a word boundary: %q", i, c)
		}
	}
}

func TestSplitCodeBlockLongerThanLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString("Intro.\n\n```python\n")
	for i := 0; i < 60; i++ {
		fmt.Fprintf(&b, "print('line %02d')\n", i)
	}
	b.WriteString("```\n\nOutro.")
	chunks := checkPieces(t, b.String(), 200)
	for i, c := range chunks {
		if i > 0 && i < len(chunks)-1 && !strings.HasPrefix(c, "```python\n") {
			t.Errorf("chunk %d does not reopen the fence: %q", i, c)
		}
		if strings.Contains(c, "print") && !strings.HasSuffix(strings.TrimSuffix(c, "\n\nOutro."), "```") {
			t.Errorf("chunk %d does not close the fence: %q", i, c)
		}
	}
	if !strings.HasSuffix(chunks[len(chunks)-1], "Outro.") {
		t.Errorf("last chunk: %q", chunks[len(chunks)-1])
	}
	// one code line longer than the limit is cut inside the block, still fenced
	long := "```js\nconst x = " + strings.Repeat("1 + ", 100) + "1;\n```"
	for i, c := range checkPieces(t, long, 80) {
		if !strings.HasPrefix(c, "```js\n") || !strings.HasSuffix(c, "\n```") {
			t.Errorf("chunk %d not fenced: %q", i, c)
		}
	}
}

func TestSplitFenceEdgeCases(t *testing.T) {
	t.Run("unclosed fence is closed", func(t *testing.T) {
		got := Split("text\n\n```sh\necho hi", 100)
		want := []string{"text\n\n```sh\necho hi\n```"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %q want %q", got, want)
		}
	})
	t.Run("fence in a quote keeps its prefix", func(t *testing.T) {
		md := "> ```\n> " + strings.Repeat("aaaa\n> ", 30) + "```"
		for i, c := range checkPieces(t, md, 60) {
			if !strings.HasPrefix(c, "> ```\n") || !strings.HasSuffix(c, "\n> ```") {
				t.Errorf("chunk %d: %q", i, c)
			}
		}
	})
	t.Run("tilde fence with backticks inside", func(t *testing.T) {
		md := "~~~\n" + strings.Repeat("```\n", 20) + "~~~"
		for i, c := range checkPieces(t, md, 30) {
			if !strings.HasPrefix(c, "~~~\n") || !strings.HasSuffix(c, "\n~~~") {
				t.Errorf("chunk %d: %q", i, c)
			}
		}
	})
	t.Run("no fake fence at a chunk start", func(t *testing.T) {
		md := strings.Repeat("x", 20) + " ``` and " + strings.Repeat("y", 20)
		for i, c := range checkPieces(t, md, 26) {
			if strings.HasPrefix(c, "```") {
				t.Errorf("chunk %d starts with a fence that was not one: %q", i, c)
			}
		}
	})
}

func TestSplitNeverCutsRunes(t *testing.T) {
	md := strings.Repeat("😀👍🏽日本語🇯🇵é", 40) // no spaces at all; é is e + combining accent
	for _, limit := range []int{1, 2, 3, 7, 50} {
		chunks := checkPieces(t, md, limit)
		for i, c := range chunks {
			if !utf8.ValidString(c) {
				t.Fatalf("limit %d chunk %d not valid UTF-8", limit, i)
			}
			if limit >= 7 && (strings.HasPrefix(c, "\U0001F3FD") || strings.HasPrefix(c, "\u0301")) {
				t.Errorf("limit %d chunk %d starts with a modifier: %q", limit, i, c)
			}
		}
	}
}

func TestSplitMaxLines(t *testing.T) {
	md := strings.Repeat("short line\n", 50)
	chunks := splitMarkdown(md, 2000, 17)
	if len(chunks) != 3 {
		t.Fatalf("want 3 chunks of <= 17 lines, got %d", len(chunks))
	}
	for i, c := range chunks {
		if n := strings.Count(c, "\n") + 1; n > 17 {
			t.Errorf("chunk %d has %d lines", i, n)
		}
	}
}

func TestSplitCodeLineWithFenceInside(t *testing.T) {
	// A long code line holding a ``` word is cut at spaces, but never so that
	// the ``` starts a continuation chunk (where it would close the block).
	for words := 1; words < 12; words++ {
		md := "```md\n" + strings.Repeat("word ", words) + "```\n" + strings.Repeat("more ", 10) + "\n```"
		for limit := 24; limit < 60; limit++ {
			checkPieces(t, md, limit)
		}
	}
}
