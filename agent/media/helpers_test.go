package media

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-pdf/fpdf"
	"github.com/switchboard-bot/switchboard/agent"
)

// voiceNote speaks text with Debian's espeak-ng and encodes it with ffmpeg
// as Telegram records voice notes: OGG/Opus, mono, 48 kHz. pad adds
// seconds of silence (for duration bounds). The test is skipped, saying
// so, without the tools (.ci/run installs them).
func voiceNote(t testing.TB, text string, pad int) []byte {
	t.Helper()
	for _, tool := range []string{"espeak-ng", "ffmpeg"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (apt-get install -y espeak-ng ffmpeg)", tool)
		}
	}
	dir := t.TempDir()
	wav, ogg := filepath.Join(dir, "speech.wav"), filepath.Join(dir, "voice.ogg")
	if out, err := exec.Command("espeak-ng", "-w", wav, text).CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v: %s", err, out)
	}
	args := []string{"-v", "error", "-y", "-i", wav}
	if pad > 0 {
		args = append(args, "-af", fmt.Sprintf("apad=pad_dur=%d", pad))
	}
	args = append(args, "-c:a", "libopus", "-b:a", "24k", "-ar", "48000", "-ac", "1", "-application", "voip", ogg)
	if out, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, out)
	}
	data, err := os.ReadFile(ogg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// makePDF writes a real PDF with fpdf: one page per entry of pages.
func makePDF(t testing.TB, pages ...string) []byte {
	t.Helper()
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.SetCompression(true)
	pdf.SetFont("Helvetica", "", 12)
	for _, p := range pages {
		pdf.AddPage()
		if p != "" {
			pdf.MultiCell(0, 6, p, "", "L", false)
		}
	}
	var buf bytes.Buffer
	if err := pdf.Output(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// makeDOCX writes a minimal real DOCX (a zip with the parts Word needs).
func makeDOCX(t testing.TB, paragraphs ...string) []byte {
	t.Helper()
	var body strings.Builder
	for _, p := range paragraphs {
		fmt.Fprintf(&body, `<w:p><w:r><w:t xml:space="preserve">%s</w:t></w:r></w:p>`, p)
	}
	files := map[string]string{
		"[Content_Types].xml": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
		"_rels/.rels":         `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`,
		"word/document.xml":   `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` + body.String() + `</w:body></w:document>`,
	}
	return zipOf(t, files)
}

func zipOf(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range []string{"[Content_Types].xml", "_rels/.rels", "word/document.xml"} {
		if c, ok := files[name]; ok {
			w, err := zw.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write([]byte(c)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// workspace records what PrepareMedia saved.
type workspace struct {
	mu    sync.Mutex
	files map[string][]byte
	err   error
}

func newWorkspace() *workspace { return &workspace{files: map[string][]byte{}} }

func (w *workspace) save(_ context.Context, path string, data []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.files[path] = append([]byte(nil), data...)
	return nil
}

func (w *workspace) find(suffix string) (string, []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for p, d := range w.files {
		if strings.HasSuffix(p, suffix) {
			return p, d
		}
	}
	return "", nil
}

var _ agent.SaveFile = newWorkspace().save
