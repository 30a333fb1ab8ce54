package markup

import (
	"strings"
	"testing"
	"unicode/utf8"
)

var fuzzSeeds = []string{
	"",
	"hello **world**",
	"# Title\n\nSome *text* with `code` & <tags> > here.\n\n- a\n  - b\n1. c\n",
	"```go\nfunc main() {\n\tprintln(\"<>&\")\n}\n```\n",
	"```\nunclosed fence\nstill code",
	"> quote\n> > nested\n> ```py\n> x = 1\n> ```\n",
	"[link](https://example.com/?a=1&b=2 \"t\") ![img](http://x/y.png) <https://auto.link> www.example.com",
	"| a | b |\n|---|---|\n| 1 | <2> |\n",
	"<div>raw</div>\n\n<b>inline</b> &amp; &copy; &#x1F600; \\*not em\\*",
	"你好世界。这是一个测试。😀👍🏽 emoji 👨‍👩‍👧",
	"~~~\n```\n~~~\n",
	"- [x] done\n- [ ] todo",
	"**bold `code` [l `c`](https://a)**",
	"a\u200d\u0301\ufe0f",
	"see ``` above and ~~~ there",
	"[x](javascript:alert(1)) [y](/relative) [z](<https://a b>)",
	"@everyone look @here",
	"> [multi\nline **label**](https://e.com) > [![i](https://i)](https://l) [<https://x>](https://y)",
	"- ```\n  code in item\n  ```\n  after\n- > quote in item\n  > ```\n  > q\n  > ```",
	"# [head `code`](https://h)\n\n***~~all~~***",
}

func FuzzSplit(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, 40)
		f.Add(strings.Repeat(s+"\n\n", 5), 100)
	}
	f.Fuzz(func(t *testing.T, md string, limit int) {
		limit = 1 + abs(limit)%300
		pieces := splitPieces(md, limit, 0)
		chunks := Split(md, limit)
		if len(chunks) != len(pieces) {
			t.Fatalf("Split and splitPieces disagree: %d vs %d", len(chunks), len(pieces))
		}
		var bodies strings.Builder
		for i, c := range chunks {
			if c != pieces[i].String() {
				t.Fatalf("chunk %d differs from its piece", i)
			}
			if n := utf8.RuneCountInString(c); n > limit {
				t.Fatalf("chunk %d has %d runes > limit %d: %q", i, n, limit, c)
			}
			if strings.TrimSpace(c) == "" {
				t.Fatalf("chunk %d is empty", i)
			}
			if !utf8.ValidString(c) {
				t.Fatalf("chunk %d is not valid UTF-8", i)
			}
			if p := pieces[i]; p.prefix != "" {
				if _, ok := parseFenceLine(strings.TrimSuffix(p.prefix, "\n")); !ok {
					t.Fatalf("added prefix %q is not a fence", p.prefix)
				}
			}
			if p := pieces[i]; p.suffix != "" {
				if _, ok := parseFenceLine(strings.TrimPrefix(p.suffix, "\n")); !ok || !strings.HasPrefix(p.suffix, "\n") {
					t.Fatalf("added suffix %q is not a fence", p.suffix)
				}
			}
			if fenceLinesShort(md, limit) && openFenceAtEnd(c) {
				t.Fatalf("chunk %d leaves a fence open (limit %d): %q", i, limit, c)
			}
			bodies.WriteString(pieces[i].body)
		}
		want := nonSpace(strings.ToValidUTF8(md, "\uFFFD"))
		if got := nonSpace(bodies.String()); got != want {
			t.Fatalf("content changed:\n got %q\nwant %q", got, want)
		}
	})
}

func FuzzTelegramChunks(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, 64)
		f.Add(strings.Repeat(s+"\n\n", 8), 200)
	}
	f.Fuzz(func(t *testing.T, md string, limit int) {
		limit = MinLimit + abs(limit)%400
		if err := checkTelegramHTML(TelegramHTML(md)); err != nil {
			t.Fatalf("TelegramHTML invalid: %v\n%q", err, TelegramHTML(md))
		}
		for i, c := range TelegramChunks(md, limit) {
			if err := checkTelegramHTML(c.Text); err != nil {
				t.Fatalf("chunk %d invalid: %v\n%q", i, err, c.Text)
			}
			if n := utf16Len(c.Text); n > limit {
				t.Fatalf("chunk %d: %d UTF-16 units > %d: %q", i, n, limit, c.Text)
			}
			if n := utf16Len(c.Plain); n > limit {
				t.Fatalf("chunk %d plain: %d UTF-16 units > %d", i, n, limit)
			}
			if strings.TrimSpace(c.Text) == "" || strings.TrimSpace(c.Plain) == "" {
				t.Fatalf("chunk %d is empty: %+v", i, c)
			}
		}
	})
}

func FuzzSlackMrkdwn(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out := SlackMrkdwn(md)
		if err := checkSlackMrkdwn(out); err != nil {
			t.Fatalf("invalid mrkdwn: %v\n%q", err, out)
		}
		for i, c := range SlackChunks(md, 200) {
			if err := checkSlackMrkdwn(c.Text); err != nil {
				t.Fatalf("chunk %d invalid: %v\n%q", i, err, c.Text)
			}
			if n := utf8.RuneCountInString(c.Text); n > 200 {
				t.Fatalf("chunk %d has %d runes", i, n)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		if -n < 0 { // MinInt
			return 0
		}
		return -n
	}
	return n
}
