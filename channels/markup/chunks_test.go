package markup

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/channels"
)

// inOrder asserts that each needle occurs exactly once across texts, in order.
func inOrder(t *testing.T, texts []string, needles []string) {
	t.Helper()
	all := strings.Join(texts, "\n")
	pos := 0
	for _, n := range needles {
		if c := strings.Count(all, n); c != 1 {
			t.Fatalf("%q occurs %d times", n, c)
		}
		i := strings.Index(all, n)
		if i < pos {
			t.Fatalf("%q out of order", n)
		}
		pos = i
	}
}

func codeLines() []string {
	var out []string
	for sec := 1; sec <= 9; sec++ {
		n := 5
		if sec == 2 {
			n = 140
		}
		for l := 0; l < n; l++ {
			out = append(out, fmt.Sprintf("line %d of part %d\"", l, sec))
		}
	}
	return out
}

func texts(cs []channels.Chunk, plain bool) []string {
	var out []string
	for _, c := range cs {
		if plain {
			out = append(out, c.Plain)
		} else {
			out = append(out, c.Text)
		}
	}
	return out
}

func TestTelegramChunksLongAnswer(t *testing.T) {
	chunks := TelegramChunks(longAnswer(), 4096)
	if len(chunks) < 3 {
		t.Fatalf("got %d chunks", len(chunks))
	}
	for i, c := range chunks {
		if err := checkTelegramHTML(c.Text); err != nil {
			t.Errorf("chunk %d: %v", i, err)
		}
		if n := utf16Len(c.Text); n > 4096 {
			t.Errorf("chunk %d: %d UTF-16 units", i, n)
		}
		if strings.ContainsAny(c.Plain, "`*") || strings.Contains(c.Plain, "<pre>") {
			t.Errorf("chunk %d plain text has markup: %q", i, c.Plain[:80])
		}
	}
	// Every code line arrives once, in order, inside a go block.
	inOrder(t, texts(chunks, true), codeLines())
	var preGo int
	for _, c := range chunks {
		preGo += strings.Count(c.Text, `<pre><code class="language-go">`)
	}
	if preGo < 10 { // 9 blocks, the long one reopened at least once
		t.Errorf("want the long go block reopened with its language, got %d go blocks", preGo)
	}
	if !strings.Contains(chunks[0].Text, "<b>Report</b>") || !strings.Contains(chunks[0].Text, "Numbers &amp; symbols &lt;like these&gt;") {
		t.Errorf("first chunk not converted: %q", chunks[0].Text[:200])
	}
}

func TestTelegramChunksGrowth(t *testing.T) {
	tests := []struct {
		name  string
		md    string
		limit int
	}{
		{"escapes expand 5x", strings.Repeat("a&b<c>d ", 2000), 4096},
		{"escapes without spaces", strings.Repeat("&", 9000), 4096},
		{"emoji count twice in UTF-16", strings.Repeat("😀", 5000), 4096},
		{"escaped code block", "```html\n" + strings.Repeat("<div>&amp;</div>\n", 600) + "```", 4096},
		{"many links", strings.Repeat("[x](https://example.com/a/very/long/path?with=query&and=more) ", 300), 4096},
		{"tiny limit is raised", "hello **world** & more", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			chunks := TelegramChunks(tc.md, tc.limit)
			limit := max(tc.limit, MinLimit)
			var plain strings.Builder
			for i, c := range chunks {
				if err := checkTelegramHTML(c.Text); err != nil {
					t.Fatalf("chunk %d: %v\n%s", i, err, c.Text)
				}
				if n := utf16Len(c.Text); n > limit {
					t.Fatalf("chunk %d: %d UTF-16 units > %d", i, n, limit)
				}
				if n := utf16Len(c.Plain); n > limit {
					t.Fatalf("chunk %d plain: %d UTF-16 units > %d", i, n, limit)
				}
				plain.WriteString(c.Plain)
			}
			if got, want := nonSpace(plain.String()), nonSpace(Plain(tc.md)); got != want {
				t.Errorf("text changed: got %d runes, want %d", utf8.RuneCountInString(got), utf8.RuneCountInString(want))
			}
		})
	}
}

func TestSlackChunks(t *testing.T) {
	chunks := SlackChunks(longAnswer(), 3500)
	if len(chunks) < 3 {
		t.Fatalf("got %d chunks", len(chunks))
	}
	for i, c := range chunks {
		if err := checkSlackMrkdwn(c.Text); err != nil {
			t.Errorf("chunk %d: %v", i, err)
		}
		if n := utf8.RuneCountInString(c.Text); n > 3500 {
			t.Errorf("chunk %d: %d runes", i, n)
		}
		if fenceLines(c.Text)%2 != 0 {
			t.Errorf("chunk %d has an open code block", i)
		}
		if strings.Contains(c.Text, "```go") {
			t.Errorf("chunk %d has a language tag", i)
		}
	}
	inOrder(t, texts(chunks, false), codeLines())
}

func TestDiscordChunks(t *testing.T) {
	md := "Hey @everyone and @Here, look:\n\n" + longAnswer()
	chunks := DiscordChunks(md, 2000, 17)
	for i, c := range chunks {
		if n := utf16Len(c.Text); n > 2000 {
			t.Errorf("chunk %d: %d UTF-16 units", i, n)
		}
		if n := strings.Count(c.Text, "\n") + 1; n > 17 {
			t.Errorf("chunk %d: %d lines", i, n)
		}
		if fenceLines(c.Text)%2 != 0 {
			t.Errorf("chunk %d has an open fence:\n%s", i, c.Text)
		}
		lower := strings.ToLower(c.Text + c.Plain)
		if strings.Contains(lower, "@everyone") || strings.Contains(lower, "@here") {
			t.Errorf("chunk %d keeps a mass mention", i)
		}
	}
	if !strings.HasPrefix(chunks[0].Text, "Hey @\u200deveryone and @\u200dHere, look:") {
		t.Errorf("first chunk: %q", chunks[0].Text)
	}
	if !strings.Contains(chunks[0].Text, "# Report") {
		t.Errorf("Discord Markdown should pass as is: %q", chunks[0].Text)
	}
	inOrder(t, texts(chunks, false), codeLines())
	// the long block is reopened with its language
	reopened := 0
	for _, c := range chunks[1:] {
		if strings.HasPrefix(c.Text, "```go\n\tfmt.Println") {
			reopened++
		}
	}
	if reopened < 5 {
		t.Errorf("want the 140-line block reopened in many 17-line chunks, got %d", reopened)
	}

	// Without a line limit, only the size limit applies.
	if n := len(DiscordChunks(strings.Repeat("line\n", 300), 2000, 0)); n != 1 {
		t.Errorf("maxLines 0 should not split by lines: %d chunks", n)
	}
}

func TestNeutralizeMentions(t *testing.T) {
	for in, want := range map[string]string{
		"@everyone":          "@\u200deveryone",
		"hi @here and @HERE": "hi @\u200dhere and @\u200dHERE",
		"mail a@b.c":         "mail a@b.c",
		"@everyone@here":     "@\u200deveryone@\u200dhere",
	} {
		if got := NeutralizeMentions(in); got != want {
			t.Errorf("NeutralizeMentions(%q) = %q, want %q", in, got, want)
		}
	}
}
