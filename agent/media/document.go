package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// Extracted is a document's text within the bounds.
type Extracted struct {
	Text  string
	Pages int // pages in the document (PDF), 0 when not paged
	Read  int // pages read (at most the page bound)
	// Truncated: the character bound cut the text.
	Truncated bool
	// NoText: the document has pages but no text layer (a scanned PDF).
	NoText bool
}

// errStop aborts a parser once a bound is reached (recovered by extract).
var errStop = errors.New("bound reached")

// ErrTimeout is a document whose extraction ran out of time.
var ErrTimeout = errors.New("extraction took too long")

// limits are one extraction's bounds.
type limits struct {
	pages int
	chars int
}

// textBuf collects text up to a character bound; past it, add panics with
// errStop so a parser stops at once.
type textBuf struct {
	b         strings.Builder
	left      int
	truncated bool
}

func newTextBuf(chars int) *textBuf { return &textBuf{left: chars} }

func (t *textBuf) add(s string) {
	if t.left <= 0 {
		t.truncated = true
		panic(errStop)
	}
	if n := utf8.RuneCountInString(s); n > t.left {
		r := []rune(s)[:t.left]
		t.b.WriteString(string(r))
		t.left = 0
		t.truncated = true
		panic(errStop)
	}
	t.b.WriteString(s)
	t.left -= utf8.RuneCountInString(s)
}

// Extract reads the text of a document of kind k within the page and
// character bounds. It runs the parser on its own goroutine under a
// deadline and recovers its panics: a hostile file costs at most the
// deadline and yields an error, never a crash.
func Extract(ctx context.Context, k Kind, data []byte, pages, chars int) (Extracted, error) {
	l := limits{pages: pages, chars: chars}
	type result struct {
		ex  Extracted
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("the file is malformed (%v)", clipText(fmt.Sprint(p), 120))}
			}
			done <- r
		}()
		r.ex, r.err = extract(ctx, k, data, l)
	}()
	select {
	case r := <-done:
		return r.ex, r.err
	case <-ctx.Done():
		return Extracted{}, ErrTimeout
	}
}

func extract(ctx context.Context, k Kind, data []byte, l limits) (Extracted, error) {
	switch k {
	case KindPDF:
		return extractPDF(ctx, data, l)
	case KindDOCX:
		return extractDOCX(ctx, data, l)
	case KindHTML:
		return extractHTML(data, l)
	case KindText:
		return extractText(data, l), nil
	}
	return Extracted{}, fmt.Errorf("%s files are not read", k)
}

// collect runs fn with a textBuf and turns errStop into a truncated result.
func collect(chars int, fn func(t *textBuf) error) (text string, truncated bool, err error) {
	t := newTextBuf(chars)
	func() {
		defer func() {
			if p := recover(); p != nil {
				if e, ok := p.(error); ok && errors.Is(e, errStop) {
					return
				}
				panic(p)
			}
		}()
		err = fn(t)
	}()
	return t.b.String(), t.truncated, err
}

// extractText: plain text, Markdown, CSV, JSON as they are (invalid UTF-8
// replaced), cut at the character bound.
func extractText(data []byte, l limits) Extracted {
	s := strings.ToValidUTF8(string(data), "\uFFFD")
	s = strings.TrimPrefix(s, "\uFEFF")
	if utf8.RuneCountInString(s) > l.chars {
		return Extracted{Text: string([]rune(s)[:l.chars]), Truncated: true}
	}
	return Extracted{Text: s}
}

// extractHTML: the visible text (no script, style, head), blocks on their
// own lines.
func extractHTML(data []byte, l limits) (Extracted, error) {
	text, trunc, err := collect(l.chars, func(t *textBuf) error {
		z := html.NewTokenizer(bytes.NewReader(data))
		skip := 0
		for {
			switch z.Next() {
			case html.ErrorToken:
				if errors.Is(z.Err(), io.EOF) {
					return nil
				}
				return z.Err()
			case html.StartTagToken:
				name, _ := z.TagName()
				switch string(name) {
				case "script", "style", "head", "noscript", "template":
					skip++
				case "br", "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article":
					t.add("\n")
				}
			case html.EndTagToken:
				name, _ := z.TagName()
				switch string(name) {
				case "script", "style", "head", "noscript", "template":
					if skip > 0 {
						skip--
					}
				}
			case html.TextToken:
				if skip == 0 {
					if s := strings.Join(strings.Fields(string(z.Text())), " "); s != "" {
						t.add(s + " ")
					}
				}
			}
		}
	})
	return Extracted{Text: tidy(text), Truncated: trunc}, err
}

// tidy trims trailing spaces of lines and collapses runs of blank lines.
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	blank := 0
	for _, ln := range lines {
		ln = strings.TrimRight(ln, " \t")
		if strings.TrimSpace(ln) == "" {
			blank++
			if blank > 1 {
				continue
			}
		} else {
			blank = 0
		}
		out = append(out, ln)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}
