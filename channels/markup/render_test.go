package markup

import (
	"strings"
	"testing"
)

type conv struct {
	name, md, want string
}

func runConv(t *testing.T, f func(string) string, cases []conv) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := f(c.md); got != c.want {
				t.Errorf("input:\n%s\ngot:\n%s\nwant:\n%s", c.md, got, c.want)
			}
		})
	}
}

func TestTelegramHTML(t *testing.T) {
	runConv(t, TelegramHTML, []conv{
		{"bold", "a **b** c __d__", "a <b>b</b> c <b>d</b>"},
		{"italic", "*a* _b_", "<i>a</i> <i>b</i>"},
		{"bold italic", "***x***", "<i><b>x</b></i>"},
		{"no duplicate bold", "**a **b** c**", "<b>a b c</b>"},
		{"strike", "~~gone~~", "<s>gone</s>"},
		{"inline code", "run `x < y && z`", "run <code>x &lt; y &amp;&amp; z</code>"},
		{"fenced code with language", "```go\nif a < b {\n\treturn\n}\n```",
			"<pre><code class=\"language-go\">if a &lt; b {\n\treturn\n}</code></pre>"},
		{"fenced code without language", "```\nplain\n```", "<pre>plain</pre>"},
		{"hostile language", "```go\"><b>\nx\n```", "<pre><code class=\"language-gob\">x</code></pre>"},
		{"indented code", "    x := 1", "<pre>x := 1</pre>"},
		{"empty code block dropped", "a\n\n```\n```\n\nb", "a\n\nb"},
		{"link", "[site](https://example.com/a?b=1&c=\"2\")",
			`<a href="https://example.com/a?b=1&amp;c=%222%22">site</a>`},
		{"link with formatting", "[**bold** `code`](https://e.com)", `<a href="https://e.com"><b>bold</b> code</a>`},
		{"autolink", "<https://e.com/x>", `<a href="https://e.com/x">https://e.com/x</a>`},
		{"bare url", "see https://e.com/x now", `see <a href="https://e.com/x">https://e.com/x</a> now`},
		{"email autolink", "<a@b.co>", `<a href="mailto:a@b.co">a@b.co</a>`},
		{"unsafe scheme shown as text", "[x](javascript:alert(1))", "x (javascript:alert(1))"},
		{"relative link shown as text", "[docs](/docs)", "docs (/docs)"},
		{"image becomes link", "![a cat](https://e.com/cat.png)", `<a href="https://e.com/cat.png">a cat</a>`},
		{"nested list", "- a\n  - b\n    - c\n- d", "• a\n  • b\n    • c\n• d"},
		{"ordered list", "1. one\n2. two\n\n   more\n3. three", "1. one\n\n2. two\n\n   more\n\n3. three"},
		{"ordered list start", "3. c\n4. d", "3. c\n4. d"},
		{"ordered in bullet", "- a\n  1. x\n  2. y", "• a\n  1. x\n  2. y"},
		{"task list", "- [x] done\n- [ ] todo", "• ☑ done\n• ☐ todo"},
		{"item starting with code", "- ```\n  x\n    y\n  ```\n  after", "• <pre>x\n  y</pre>\n  after"},
		{"quote", "> line one\n> **two**", "<blockquote>line one\n<b>two</b></blockquote>"},
		{"nested quote flattened", "> a\n>\n> > b", "<blockquote>a\n\nb</blockquote>"},
		{"code in quote leaves the quote", "> look:\n> ```\n> x\n> ```\n> after",
			"<blockquote>look:</blockquote>\n\n<pre>x</pre>\n\n<blockquote>after</blockquote>"},
		{"list in quote", "> - a\n> - b", "<blockquote>• a\n• b</blockquote>"},
		{"heading", "# Title\n\ntext\n\n## Sub *it*", "<b>Title</b>\n\ntext\n\n<b>Sub <i>it</i></b>"},
		{"thematic break", "a\n\n---\n\nb", "a\n\n──────────\n\nb"},
		{"escaping", "AT&T: 1 < 2 > 0", "AT&amp;T: 1 &lt; 2 &gt; 0"},
		{"entities and escapes", "&copy; &#x1F600; \\*lit\\* &amp;", "© 😀 *lit* &amp;"},
		{"raw inline html escaped", "a <b onclick=\"x\">b</b> c", "a &lt;b onclick=\"x\"&gt;b&lt;/b&gt; c"},
		{"raw html block escaped", "<div>\n<script>alert(1)</script>\n</div>",
			"&lt;div&gt;\n&lt;script&gt;alert(1)&lt;/script&gt;\n&lt;/div&gt;"},
		{"emoji and CJK", "**你好** 世界 😀👍🏽 `日本`", "<b>你好</b> 世界 😀👍🏽 <code>日本</code>"},
		{"line breaks kept", "one\ntwo  \nthree", "one\ntwo\nthree"},
		{"table", "| a | bb |\n|---|---:|\n| 1 | <2> |", "<pre>a |  bb\n--+----\n1 | &lt;2&gt;</pre>"},
		{"link definition invisible", "[x]: https://e.com\n\n[x]", `<a href="https://e.com">x</a>`},
	})
}

func TestSlackMrkdwn(t *testing.T) {
	runConv(t, SlackMrkdwn, []conv{
		{"bold", "a **b** c", "a *b* c"},
		{"italic", "*a* _b_", "_a_ _b_"},
		{"strike", "~~x~~", "~x~"},
		{"nested styles", "**a *b* **c** d**", "*a _b_ c d*"},
		{"inline code", "`a < b`", "`a &lt; b`"},
		{"fenced code drops language", "```go\nx := a && b\n```", "```\nx := a &amp;&amp; b\n```"},
		{"link", "[site](https://e.com/?a=1&b=2)", "<https://e.com/?a=1&amp;b=2|site>"},
		{"link text with | and >", "[a|b > c](https://e.com/x|y)", "<https://e.com/x%7Cy|a|b &gt; c>"},
		{"link same as text", "<https://e.com>", "<https://e.com>"},
		{"link label over two lines in a quote", "> [a\nb](https://e.com)", "> <https://e.com|a b>"},
		{"image", "![pic](https://e.com/p.png)", "<https://e.com/p.png|pic>"},
		{"unsafe link", "[x](javascript:void)", "x (javascript:void)"},
		{"nested list", "- a\n  - b\n- c", "• a\n  • b\n• c"},
		{"ordered list", "1. x\n2. y", "1. x\n2. y"},
		{"quote", "> q1\n> q2\n>\n> q3", "> q1\n> q2\n>\n> q3"},
		{"code in quote", "> ```\n> x\n> ```", "> ```\n> x\n> ```"},
		{"heading", "## Head\ntext", "*Head*\n\ntext"},
		{"escaping", "AT&T <b> 1 > 0", "AT&amp;T &lt;b&gt; 1 &gt; 0"},
		{"raw html", "<div>hi</div>", "&lt;div&gt;hi&lt;/div&gt;"},
		{"emoji and CJK", "**你好** 😀", "*你好* 😀"},
		{"table", "| a | b |\n|---|---|\n| 1 | 2 |", "```\na | b\n--+--\n1 | 2\n```"},
	})
}

func TestPlain(t *testing.T) {
	runConv(t, Plain, []conv{
		{"markers removed", "**b** *i* ~~s~~ `c`", "b i s c"},
		{"link", "[site](https://e.com)", "site (https://e.com)"},
		{"autolink", "<https://e.com>", "https://e.com"},
		{"image", "![cat](https://e.com/c.png)", "cat (https://e.com/c.png)"},
		{"code block", "```go\nx < y\n```", "x < y"},
		{"lists", "- a\n  - b\n1. c", "• a\n  • b\n\n1. c"},
		{"quote", "> a\n> b", "> a\n> b"},
		{"heading", "# T\nx", "T\n\nx"},
		{"no escaping", "a & b < c", "a & b < c"},
		{"raw html kept literally", "<b>x</b>", "<b>x</b>"},
		{"emoji and CJK", "你好 **世界** 😀", "你好 世界 😀"},
	})
}

func TestTelegramHTMLIsValid(t *testing.T) {
	// Every conversion in the tables above must also pass the validator.
	inputs := []string{
		"> quote with [link](https://e.com) and `code`\n> > nested\n> ```\n> x\n> ```\n",
		"- item\n\n  > quoted in a list\n\n  ```py\n  print('<x>')\n  ```\n",
		"**[`code in link in bold`](https://e.com)**",
		"<details><summary>x</summary>y</details>",
	}
	for _, in := range inputs {
		out := TelegramHTML(in)
		if err := checkTelegramHTML(out); err != nil {
			t.Errorf("invalid for %q: %v\n%s", in, err, out)
		}
		if strings.TrimSpace(out) == "" {
			t.Errorf("empty output for %q", in)
		}
	}
}
