package tools

import (
	"net/url"
	"strings"
	"testing"
)

func TestExtractHTML(t *testing.T) {
	base, _ := url.Parse("https://example.com/docs/page.html")
	tests := []struct {
		name      string
		doc       string
		wantTitle string
		wantText  string
	}{
		{
			name: "article",
			doc: `<!doctype html><html><head><title>  Release
				notes &amp; more </title><style>body{color:red}</style>
				<script>var secret = "do not show";</script></head>
				<body><nav><a href="/">Home</a></nav>
				<h1>Version 2.0</h1>
				<p>The   new version
				is <b>faster</b>.</p>
				<noscript>Enable JavaScript!</noscript>
				<h2>Changes</h2>
				<ul><li>New parser</li><li>See <a href="changes.html#x">the list</a></li></ul>
				<script type="module">alert("x")</script>
				<p>Mail <a href="mailto:team@example.com">team@example.com</a> or
				<a href="javascript:void(0)">click</a> or <a href="#top">top</a>.</p>
				</body></html>`,
			wantTitle: "Release notes & more",
			wantText: "Home (https://example.com/)\n" +
				"# Version 2.0\n" +
				"The new version is faster.\n" +
				"## Changes\n" +
				"- New parser\n" +
				"- See the list (https://example.com/docs/changes.html#x)\n" +
				"Mail team@example.com (mailto:team@example.com) or click or top.",
		},
		{
			name:     "table and pre",
			doc:      "<table><tr><th>Name</th><th>Age</th></tr><tr><td>Ann</td><td>31</td></tr></table><pre>  x := 1\n  y := 2\n</pre><p>after<br>break</p>",
			wantText: "Name | Age\nAnn | 31\n  x := 1\n  y := 2\nafter\nbreak",
		},
		{
			name:     "link whose text is its URL, image link",
			doc:      `<p><a href="https://go.dev/">https://go.dev/</a> <a href="/img"><img src="x.png"></a></p>`,
			wantText: "https://go.dev/ https://example.com/img",
		},
		{
			name:     "dropped containers",
			doc:      `<p>a</p><template><p>tpl</p></template><svg><title>svgtitle</title><text>svg</text></svg><select><option>opt</option></select><textarea>ta</textarea><iframe>frame</iframe><p>b</p>`,
			wantText: "a\nb",
		},
		{
			name:      "escaped script text is defanged",
			doc:       `<title>&lt;script&gt;x</title><p>Write &lt;script src=x&gt; and &lt;/SCRIPT&gt; in HTML</p>`,
			wantTitle: "< script>x",
			wantText:  "Write < script src=x> and < /SCRIPT> in HTML",
		},
		{
			name:     "unclosed script swallows the rest",
			doc:      `<p>visible</p><script>document.write("<p>hidden</p>")`,
			wantText: "visible",
		},
		{
			name:     "malformed",
			doc:      `<p>one<div>two</p>three<li>four`,
			wantText: "one\ntwo\nthree\n- four",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ExtractHTML([]byte(tc.doc), base)
			if got.Title != tc.wantTitle {
				t.Errorf("title\n got %q\nwant %q", got.Title, tc.wantTitle)
			}
			if got.Text != tc.wantText {
				t.Errorf("text\n got %q\nwant %q", got.Text, tc.wantText)
			}
		})
	}
}

func TestExtractHTMLDeepNesting(t *testing.T) {
	// Deeper than x/net/html's tree parser accepts (512 open elements).
	doc := strings.Repeat("<div>", 5000) + "deep text" + strings.Repeat("</div>", 5000)
	if got := ExtractHTML([]byte(doc), nil).Text; got != "deep text" {
		t.Errorf("got %q", got)
	}
}

func TestDefangScript(t *testing.T) {
	for in, want := range map[string]string{
		"a <script> b":       "a < script> b",
		"</ScRiPt>":          "< /ScRiPt>",
		"<scrİpt>":           "< scrİpt>",
		"<ſcript>":           "< ſcript>",
		"<scrip":             "<scrip",
		"<<script":           "<< script",
		"1 < 2 and <b>":      "1 < 2 and <b>",
		"<\u212Aeep><script": "<\u212Aeep>< script",
	} {
		if got := defangScript(in); got != want {
			t.Errorf("defangScript(%q) = %q, want %q", in, got, want)
		}
	}
}

// containsScriptTag reports "<script" or "</script" under ASCII case
// folding, Unicode simple folding and unicode.ToLower.
func containsScriptTag(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '<' {
			continue
		}
		rest := strings.TrimPrefix(s[i+1:], "/")
		if hasFoldPrefix(rest, "script") {
			return true
		}
	}
	l := strings.ToLower(s)
	return strings.Contains(l, "<script") || strings.Contains(l, "</script")
}

func FuzzExtractHTML(f *testing.F) {
	for _, seed := range []string{
		"<html><head><title>t</title><script>x</script></head><body><p>hi <a href='/a'>a</a></p></body></html>",
		"&lt;script&gt;alert(1)&lt;/script&gt;",
		"<p>&lt;scr<b></b>ipt&gt;</p>",
		"<title><script></title>",
		"<pre>&lt;SCRIPT</pre>",
		"<a href='<script>'>x</a>",
		"<table><td>a<td>b<tr><th>c</table>",
		"<svg><script>x</script></svg><p>y",
		"<scrİpt>",
		"<ul><li><a href=x><p>block in link</p></a></ul>",
	} {
		f.Add([]byte(seed))
	}
	base, _ := url.Parse("https://example.com/dir/")
	f.Fuzz(func(t *testing.T, doc []byte) {
		p := ExtractHTML(doc, base)
		if containsScriptTag(p.Title) || containsScriptTag(p.Text) {
			t.Fatalf("output contains a script tag: title %q text %q", p.Title, p.Text)
		}
		if containsScriptTag("Title: " + p.Title + "\n\n" + p.Text) {
			t.Fatalf("combined output contains a script tag")
		}
	})
}
