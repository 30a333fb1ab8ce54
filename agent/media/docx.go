package media

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
)

// maxDOCXXML bounds the bytes of word/document.xml that are inflated: a
// zip bomb stops here, however it is compressed or what its header claims.
// Below it the bound is 100 times the part's compressed size (at least
// minDOCXXML): real documents compress their XML some 5 to 20 times, so a
// small file that inflates a thousandfold is stopped early and cheaply.
const (
	maxDOCXXML = 64 << 20
	minDOCXXML = 4 << 20
)

// zipBomb is the error of a DOCX whose document inflates past limit.
func zipBomb(limit int64) error {
	return fmt.Errorf("the document inflates to more than %s (a zip bomb?)", sizeText(limit))
}

// extractDOCX reads the paragraphs of word/document.xml (w:t runs, tabs and
// breaks) from the zip, inflating at most maxDOCXXML bytes.
func extractDOCX(ctx context.Context, data []byte, l limits) (Extracted, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return Extracted{}, fmt.Errorf("the DOCX cannot be read: %s", clipText(err.Error(), 120))
	}
	var doc *zip.File
	for _, f := range zr.File {
		if f.Name == "word/document.xml" {
			doc = f
			break
		}
	}
	if doc == nil {
		return Extracted{}, errors.New("the DOCX has no word/document.xml")
	}
	rc, err := doc.Open()
	if err != nil {
		return Extracted{}, fmt.Errorf("the DOCX cannot be read: %s", clipText(err.Error(), 120))
	}
	defer rc.Close()
	bound := min(max(int64(doc.CompressedSize64)*100, minDOCXXML), maxDOCXXML)
	lr := &limitedReader{r: rc, left: bound}
	text, trunc, err := collect(l.chars, func(t *textBuf) error {
		dec := xml.NewDecoder(lr)
		dec.Strict = false
		inText := false
		tokens := 0
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				if lr.over {
					return zipBomb(bound)
				}
				return fmt.Errorf("the DOCX is malformed: %s", clipText(err.Error(), 120))
			}
			if tokens++; tokens%4096 == 0 && ctx.Err() != nil {
				return ErrTimeout
			}
			switch el := tok.(type) {
			case xml.StartElement:
				switch el.Name.Local {
				case "t":
					inText = true
				case "tab":
					t.add("\t")
				case "br", "cr":
					t.add("\n")
				}
			case xml.EndElement:
				switch el.Name.Local {
				case "t":
					inText = false
				case "p":
					t.add("\n")
				}
			case xml.CharData:
				if inText {
					t.add(string(el))
				}
			}
		}
	})
	if err == nil && lr.over {
		err = zipBomb(bound)
	}
	return Extracted{Text: tidy(text), Truncated: trunc}, err
}

var errInflated = errors.New("inflated past the bound")

// limitedReader reads at most left bytes and then fails, remembering that
// it was cut (io.LimitReader would end quietly, hiding a bomb).
type limitedReader struct {
	r    io.Reader
	left int64
	over bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		l.over = true
		return 0, errInflated
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
