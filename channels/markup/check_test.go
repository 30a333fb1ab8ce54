package markup

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// This file holds independent checkers the tests and fuzzers use to judge the
// output: a Telegram HTML validator, a Slack mrkdwn escaping validator and a
// fence-balance scanner. They are written from the platforms' rules, not from
// the renderer's code.

var (
	tgAllowed = map[string]bool{"b": true, "i": true, "u": true, "s": true, "code": true, "pre": true,
		"a": true, "blockquote": true, "tg-spoiler": true}
	tgEntity     = regexp.MustCompile(`^&(lt|gt|amp|quot|#[0-9]{1,7}|#x[0-9a-fA-F]{1,6});`)
	tgTag        = regexp.MustCompile(`^<(/?)([a-z-]+)((?: [a-z]+="[^"<>]*")*)>`)
	tgAttr       = regexp.MustCompile(` ([a-z]+)="([^"<>]*)"`)
	codeClass    = regexp.MustCompile(`^language-[A-Za-z0-9_+#.-]+$`)
	slackLink    = regexp.MustCompile(`^<([^<>|\s]+)(\|[^<>]*)?>`)
	slackEnt     = regexp.MustCompile(`^&(amp|lt|gt);`)
	tgHrefScheme = regexp.MustCompile(`^(https?|mailto|ftp|tg):`)
)

// checkTelegramHTML validates s against Telegram's HTML parse mode: only the
// supported tags, attributes only href on a and class="language-x" on a code
// directly inside pre, every tag closed in order, no raw & < > outside
// entities and tags, nothing inside code/pre except pre's one code child, no
// link or code inside a link, no nested blockquote, no pre inside blockquote.
func checkTelegramHTML(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("invalid UTF-8")
	}
	var stack []string
	in := func(tag string) bool {
		for _, t := range stack {
			if t == tag {
				return true
			}
		}
		return false
	}
	for i := 0; i < len(s); {
		switch s[i] {
		case '&':
			m := tgEntity.FindString(s[i:])
			if m == "" {
				return fmt.Errorf("raw & at %d: %q", i, around(s, i))
			}
			i += len(m)
		case '>':
			return fmt.Errorf("raw > at %d: %q", i, around(s, i))
		case '<':
			m := tgTag.FindStringSubmatch(s[i:])
			if m == nil {
				return fmt.Errorf("raw < or malformed tag at %d: %q", i, around(s, i))
			}
			closing, name, attrs := m[1] == "/", m[2], m[3]
			if !tgAllowed[name] {
				return fmt.Errorf("tag <%s> not allowed", name)
			}
			if closing {
				if attrs != "" {
					return fmt.Errorf("closing tag with attributes: %q", m[0])
				}
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return fmt.Errorf("</%s> closes %v", name, stack)
				}
				stack = stack[:len(stack)-1]
				i += len(m[0])
				continue
			}
			for _, a := range tgAttr.FindAllStringSubmatch(attrs, -1) {
				switch {
				case name == "a" && a[1] == "href":
					if !tgHrefScheme.MatchString(a[2]) {
						return fmt.Errorf("href %q has no allowed scheme", a[2])
					}
					if strings.Contains(strings.NewReplacer("&amp;", "", "&quot;", "", "&lt;", "", "&gt;", "").Replace(a[2]), "&") {
						return fmt.Errorf("raw & in href %q", a[2])
					}
				case name == "code" && a[1] == "class":
					if !codeClass.MatchString(a[2]) {
						return fmt.Errorf("bad code class %q", a[2])
					}
					if len(stack) == 0 || stack[len(stack)-1] != "pre" || !strings.HasSuffix(s[:i], "<pre>") {
						return fmt.Errorf("code with class must be the first thing in pre")
					}
				default:
					return fmt.Errorf("attribute %s not allowed on <%s>", a[1], name)
				}
			}
			if name == "a" && !strings.Contains(attrs, "href=") {
				return fmt.Errorf("<a> without href")
			}
			switch {
			case in("code"):
				return fmt.Errorf("<%s> inside code", name)
			case in("pre") && !(name == "code" && strings.HasSuffix(s[:i], "<pre>")):
				return fmt.Errorf("<%s> inside pre", name)
			case in("a") && (name == "a" || name == "code" || name == "pre"):
				return fmt.Errorf("<%s> inside a link", name)
			case name == "blockquote" && in("blockquote"):
				return fmt.Errorf("nested blockquote")
			case name == "pre" && (in("blockquote") || len(stack) > 0):
				return fmt.Errorf("pre inside %v", stack)
			}
			stack = append(stack, name)
			i += len(m[0])
		default:
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
	}
	if len(stack) > 0 {
		return fmt.Errorf("unclosed tags %v", stack)
	}
	return nil
}

// checkSlackMrkdwn validates Slack escaping: no raw < or > except in link
// sequences <url> / <url|text> (url without spaces, | < >; text without < >)
// and one quote marker "> " at the start of a line; no raw & except &amp;
// &lt; &gt;.
func checkSlackMrkdwn(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("invalid UTF-8")
	}
	for i := 0; i < len(s); {
		if i == 0 || s[i-1] == '\n' {
			j := i
			for j < len(s) && s[j] == ' ' {
				j++
			}
			if j < len(s) && s[j] == '>' && (j+1 == len(s) || s[j+1] == ' ' || s[j+1] == '\n') {
				i = j + 1 // a quote marker
				continue
			}
		}
		switch s[i] {
		case '&':
			m := slackEnt.FindString(s[i:])
			if m == "" {
				return fmt.Errorf("raw & at %d: %q", i, around(s, i))
			}
			i += len(m)
		case '>':
			return fmt.Errorf("raw > at %d: %q", i, around(s, i))
		case '<':
			m := slackLink.FindStringSubmatch(s[i:])
			if m == nil {
				return fmt.Errorf("raw < at %d: %q", i, around(s, i))
			}
			if err := checkSlackEntities(m[1] + m[2]); err != nil {
				return fmt.Errorf("in link %q: %w", m[0], err)
			}
			i += len(m[0])
		default:
			i++
		}
	}
	return nil
}

func checkSlackEntities(s string) error {
	for i := 0; i < len(s); i++ {
		if s[i] == '&' && slackEnt.FindString(s[i:]) == "" {
			return fmt.Errorf("raw & at %d", i)
		}
	}
	return nil
}

func around(s string, i int) string {
	lo, hi := max(0, i-20), min(len(s), i+20)
	return s[lo:hi]
}

// openFenceAtEnd scans s line by line with CommonMark's fence rules (any
// indentation or quote markers allowed) and reports whether a fenced block is
// still open at the end.
func openFenceAtEnd(s string) bool {
	var openChar byte
	openCount := 0
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimLeft(line, " \t>")
		if len(t) < 3 || (t[0] != '`' && t[0] != '~') {
			continue
		}
		c := t[0]
		n := len(t) - len(strings.TrimLeft(t, string(c)))
		rest := t[n:]
		if n < 3 {
			continue
		}
		if openCount == 0 {
			if c == '`' && strings.Contains(rest, "`") {
				continue
			}
			openChar, openCount = c, n
		} else if c == openChar && n >= openCount && strings.TrimSpace(rest) == "" {
			openCount = 0
		}
	}
	return openCount > 0
}

// fenceLinesShort reports whether every fence-looking line of md is short
// enough (relative to limit) for Split to protect it.
func fenceLinesShort(md string, limit int) bool {
	for _, line := range strings.Split(md, "\n") {
		t := strings.TrimLeft(line, " \t>")
		if (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")) && 8*utf8.RuneCountInString(line)+8 > limit {
			return false
		}
	}
	return true
}

// nonSpace drops all whitespace.
func nonSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// The checkers must be able to fail, or the fuzzers prove nothing.
func TestCheckersRejectBadMarkup(t *testing.T) {
	badTelegram := []string{
		"a < b", "a > b", "AT&T", "<b>x", "<b><i>x</b></i>", "<div>x</div>", `<a href="javascript:x">y</a>`,
		`<b class="x">y</b>`, "<code><b>x</b></code>", "<blockquote><blockquote>x</blockquote></blockquote>",
		`<a href="https://a"><code>x</code></a>`, `<code class="language-go">x</code>`, "<blockquote><pre>x</pre></blockquote>",
		`<a href="https://a?x&y">z</a>`, "\xff",
	}
	for _, s := range badTelegram {
		if checkTelegramHTML(s) == nil {
			t.Errorf("checkTelegramHTML accepted %q", s)
		}
	}
	goodTelegram := []string{"a &lt; b &amp; c", `<pre><code class="language-go">x &gt; y</code></pre>`,
		`<b>x <i>y</i></b> <a href="https://e.com/?a=1&amp;b=&quot;">l</a>`, "<blockquote>q <b>b</b></blockquote><pre>x</pre>"}
	for _, s := range goodTelegram {
		if err := checkTelegramHTML(s); err != nil {
			t.Errorf("checkTelegramHTML rejected %q: %v", s, err)
		}
	}
	for _, s := range []string{"a < b", "a > b", "AT&T", "> > x", ">x", "<https://a b|x>", "<https://a|x<y>", "<https://a?x&y|z>"} {
		if checkSlackMrkdwn(s) == nil {
			t.Errorf("checkSlackMrkdwn accepted %q", s)
		}
	}
	for _, s := range []string{"a &lt; b &amp;", "<https://a.com/?a=1&amp;b=2|x &gt; y>", "<mailto:a@b.c>"} {
		if err := checkSlackMrkdwn(s); err != nil {
			t.Errorf("checkSlackMrkdwn rejected %q: %v", s, err)
		}
	}
	if !openFenceAtEnd("```go\nx") || openFenceAtEnd("```go\nx\n```") || !openFenceAtEnd("````\n```\n") {
		t.Error("openFenceAtEnd is wrong")
	}
}
