package ui

import (
	"strings"
	"testing"
)

func TestMarkdownKeepsOnlySafeLinks(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string // substrings of the HTML
		not      []string
	}{
		{"https link", "[ok](https://example.com/a)", []string{`<a href="https://example.com/a" rel="noopener noreferrer nofollow">ok</a>`}, nil},
		{"mailto", "[mail](mailto:a@example.com)", []string{`href="mailto:a@example.com"`}, nil},
		{"javascript link keeps its text", "[click](javascript:alert(1))", []string{"click"}, []string{"<a", "javascript"}},
		{"mixed-case scheme", "[x](JaVaScRiPt:alert(1))", []string{"x"}, []string{"<a"}},
		{"data link", "[x](data:text/html;base64,PHNjcmlwdD4=)", nil, []string{"<a", "data:"}},
		{"relative link", "[x](/ui/config)", nil, []string{"<a"}},
		{"the console's file download", "📎 [a.csv](/ui/sessions/file?key=web%3Aops&path=out%2Fa.csv) (12 B)",
			[]string{`<a href="/ui/sessions/file?key=web%3Aops&amp;path=out%2Fa.csv"`}, nil},
		{"protocol-relative download", "[x](//evil.example/ui/sessions/file?key=a)", nil, []string{"<a"}},
		{"download path with a scheme-less host trick", "[x](/ui/sessions/file/../config?key=a)", nil, []string{"<a"}},
		{"a hostile file name stays text", "📎 [\\[x\\]\\(javascript:alert\\(1\\)\\)](/ui/sessions/file?key=web%3Aops&path=x) (1 B)",
			[]string{"[x](javascript:alert(1))"}, []string{"href=\"javascript"}},
		{"vbscript autolink", "<vbscript:msgbox(1)>", nil, []string{"<a"}},
		{"https autolink", "<https://example.com>", []string{`href="https://example.com"`}, nil},
		{"image becomes a link", "![alt](https://tracker.example/p.png)", []string{`href="https://tracker.example/p.png"`, "alt"}, []string{"<img"}},
		{"javascript image", "![alt](javascript:alert(1))", []string{"alt"}, []string{"<img", "<a", "javascript"}},
		{"raw html omitted", "<script>alert(1)</script> <img src=x onerror=alert(1)>", nil, []string{"<script", "<img"}},
		{"reference link", "[x][1]\n\n[1]: javascript:alert(1)", []string{"x"}, []string{"<a"}},
		{"code stays code", "`<b>`", []string{"<code>&lt;b&gt;</code>"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := string(markdownHTML(tc.in))
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q → %s; want %q in it", tc.in, got, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(strings.ToLower(got), strings.ToLower(n)) {
					t.Errorf("%q → %s; must not contain %q", tc.in, got, n)
				}
			}
		})
	}
}
