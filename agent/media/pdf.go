package media

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/ledongthuc/pdf"
)

// extractPDF reads the text layer of at most l.pages pages with
// github.com/ledongthuc/pdf (pure Go). The page tree is walked here, with a
// node budget, so a tree that loops or claims a billion pages costs no more
// than the bound; each page's content is interpreted with a character
// budget and a check of ctx between operators.
func extractPDF(ctx context.Context, data []byte, l limits) (Extracted, error) {
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return Extracted{}, fmt.Errorf("the PDF cannot be read: %s", clipText(err.Error(), 120))
	}
	root := r.Trailer().Key("Root").Key("Pages")
	if root.Kind() != pdf.Dict {
		return Extracted{}, fmt.Errorf("the PDF cannot be read: it has no page tree")
	}
	total := int(root.Key("Count").Int64())
	pages := pdfPages(root, l.pages)
	if total < len(pages) {
		total = len(pages)
	}
	ex := Extracted{Pages: total}
	var read int
	text, trunc, err := collect(l.chars, func(t *textBuf) error {
		for i, p := range pages {
			if err := ctx.Err(); err != nil {
				return ErrTimeout
			}
			if i > 0 {
				t.add("\n\n")
			}
			pageText(ctx, p, t)
			read = i + 1
		}
		return nil
	})
	if trunc {
		read = max(read, 1)
	}
	ex.Read, ex.Truncated = read, trunc || len(pages) < total
	ex.Text = tidy(text)
	if err != nil {
		return ex, err
	}
	if strings.TrimSpace(ex.Text) == "" && len(pages) > 0 {
		ex.NoText = true
	}
	return ex, nil
}

// pdfPages walks the page tree depth first and returns at most limit
// pages. The walk visits at most a fixed budget of nodes, so a cyclic or
// absurd tree ends.
func pdfPages(root pdf.Value, limit int) []pdf.Page {
	budget := limit*4 + 1024
	var out []pdf.Page
	var walk func(n pdf.Value, depth int)
	walk = func(n pdf.Value, depth int) {
		if len(out) >= limit || budget <= 0 || depth > 64 {
			return
		}
		budget--
		switch n.Key("Type").Name() {
		case "Page":
			out = append(out, pdf.Page{V: n})
			return
		case "Pages", "":
			kids := n.Key("Kids")
			for i := 0; i < kids.Len() && len(out) < limit && budget > 0; i++ {
				walk(kids.Index(i), depth+1)
			}
		}
	}
	walk(root, 0)
	return out
}

// pageText interprets one page's content stream, writing the shown text
// into t (which stops the interpreter at the character bound).
func pageText(ctx context.Context, p pdf.Page, t *textBuf) {
	content := p.V.Key("Contents")
	if content.Kind() == pdf.Null {
		return
	}
	fonts := map[string]pdf.TextEncoding{}
	for _, name := range p.Fonts() {
		f := p.Font(name)
		fonts[name] = f.Encoder()
	}
	var enc pdf.TextEncoding
	decode := func(raw string) string {
		if enc == nil {
			return raw
		}
		return enc.Decode(raw)
	}
	ops := 0
	pdf.Interpret(content, func(stk *pdf.Stack, op string) {
		ops++
		if ops%1024 == 0 && ctx.Err() != nil {
			panic(errStop)
		}
		n := stk.Len()
		args := make([]pdf.Value, n)
		for i := n - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		switch op {
		case "BT":
			t.add("\n")
		case "T*", "Td", "TD":
			if op == "T*" || len(args) == 2 && args[1].Float64() != 0 {
				t.add("\n")
			}
		case "Tf":
			if len(args) == 2 {
				enc = fonts[args[0].Name()]
			}
		case "Tj", "'", "\"":
			if len(args) > 0 {
				if op != "Tj" {
					t.add("\n")
				}
				t.add(decode(args[len(args)-1].RawString()))
			}
		case "TJ":
			if len(args) == 1 {
				v := args[0]
				for i := 0; i < v.Len(); i++ {
					x := v.Index(i)
					switch x.Kind() {
					case pdf.String:
						t.add(decode(x.RawString()))
					case pdf.Integer, pdf.Real:
						if x.Float64() < -200 { // a wide gap is a space
							t.add(" ")
						}
					}
				}
			}
		}
	})
}
