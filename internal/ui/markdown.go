package ui

import (
	"bytes"
	"github.com/switchboard-bot/switchboard/channels/web"
	"html/template"
	"net/url"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// md renders model Markdown: goldmark's HTML renderer without WithUnsafe
// (raw HTML is omitted) and with safeLinks, which keeps only http, https and
// mailto destinations (and the console's own file download, web.DownloadPath)
// and turns images into links. It is built at the first
// page that renders Markdown, not at start (an idle daemon does without it).
var md = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(
		goldmark.WithExtensions(extension.Strikethrough, extension.Table),
		goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(safeLinks{}, 0))),
	)
})

// maxMarkdown bounds what is rendered as Markdown; longer text is shown plain.
const maxMarkdown = 256 << 10

// markdownHTML renders s as sanitized HTML.
func markdownHTML(s string) template.HTML {
	if len(s) > maxMarkdown {
		return template.HTML("<pre>" + template.HTMLEscapeString(s) + "</pre>")
	}
	var b bytes.Buffer
	if err := md().Convert([]byte(s), &b); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(s) + "</pre>")
	}
	return template.HTML(b.String()) //nolint:gosec // goldmark without raw HTML, links filtered by safeLinks
}

// allowedURL reports whether a link destination may be rendered.
func allowedURL(dest string) bool {
	if strings.ContainsAny(dest, " \t\r\n\x00") {
		return false
	}
	u, err := url.Parse(dest)
	if err != nil {
		return false
	}
	if u.Scheme == "" && u.Host == "" && u.User == nil && u.Path == web.DownloadPath && u.RawPath == "" &&
		strings.HasPrefix(dest, web.DownloadPath+"?") {
		// The one relative link: a file the bot sent in the console's chat
		// (channels/web), served by the console to the logged-in operator
		// as a download (never rendered).
		return true
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return u.Host != ""
	case "mailto":
		return u.Opaque != ""
	}
	return false
}

// safeLinks rewrites links, images and autolinks after parsing.
type safeLinks struct{}

func (safeLinks) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	src := reader.Source()
	var nodes []ast.Node
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			switch n.Kind() {
			case ast.KindLink, ast.KindImage, ast.KindAutoLink:
				nodes = append(nodes, n)
			}
		}
		return ast.WalkContinue, nil
	})
	for _, n := range nodes {
		parent := n.Parent()
		if parent == nil {
			continue
		}
		switch v := n.(type) {
		case *ast.Link:
			if allowedURL(string(v.Destination)) {
				v.SetAttributeString("rel", []byte("noopener noreferrer nofollow"))
				continue
			}
			unwrap(parent, n)
		case *ast.Image:
			if !allowedURL(string(v.Destination)) {
				unwrap(parent, n)
				continue
			}
			l := ast.NewLink()
			l.Destination = v.Destination
			l.SetAttributeString("rel", []byte("noopener noreferrer nofollow"))
			l.AppendChild(l, ast.NewString([]byte("[image] ")))
			for c := v.FirstChild(); c != nil; {
				next := c.NextSibling()
				l.AppendChild(l, c)
				c = next
			}
			parent.ReplaceChild(parent, n, l)
		case *ast.AutoLink:
			u := v.URL(src)
			if allowedURL(string(u)) {
				continue
			}
			parent.ReplaceChild(parent, n, ast.NewString(v.Label(src)))
		}
	}
}

// unwrap replaces n by its children (the link text stays, the link goes).
func unwrap(parent, n ast.Node) {
	for c := n.FirstChild(); c != nil; {
		next := c.NextSibling()
		parent.InsertBefore(parent, n, c)
		c = next
	}
	parent.RemoveChild(parent, n)
}
