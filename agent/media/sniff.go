package media

import (
	"archive/zip"
	"bytes"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"
)

// Kind is what an attachment is, read from its bytes.
type Kind string

// Kinds.
const (
	KindImage   Kind = "image"
	KindAudio   Kind = "audio"
	KindPDF     Kind = "pdf"
	KindDOCX    Kind = "docx"
	KindHTML    Kind = "html"
	KindText    Kind = "text" // plain text, Markdown, CSV, JSON
	KindVideo   Kind = "video"
	KindArchive Kind = "archive"
	KindBinary  Kind = "binary"
	KindEmpty   Kind = "empty"
)

// Sniffed is an attachment's kind and the MIME type its bytes show.
type Sniffed struct {
	Kind Kind
	MIME string
	// Lied is set when the name's extension or the announced MIME type
	// promised another kind (a "report.pdf" that is a PNG).
	Lied bool
}

// Sniff reads the kind from data; mime and name are what the platform
// announced and only refine text kinds (Markdown, CSV, JSON).
func Sniff(data []byte, mime, name string) Sniffed {
	s := sniffBytes(data, mime, name)
	claimed := claimedKind(mime, name)
	s.Lied = claimed != "" && claimed != s.Kind && s.Kind != KindEmpty &&
		!(claimed == KindText && s.Kind == KindHTML) && !(claimed == KindHTML && s.Kind == KindText)
	return s
}

func sniffBytes(data []byte, mime, name string) Sniffed {
	switch {
	case len(data) == 0:
		return Sniffed{Kind: KindEmpty, MIME: mime}
	case bytes.HasPrefix(data, []byte("%PDF-")):
		return Sniffed{Kind: KindPDF, MIME: "application/pdf"}
	case bytes.HasPrefix(data, []byte("OggS")):
		return Sniffed{Kind: KindAudio, MIME: "audio/ogg"}
	case bytes.HasPrefix(data, []byte("fLaC")):
		return Sniffed{Kind: KindAudio, MIME: "audio/flac"}
	case bytes.HasPrefix(data, []byte("ID3")) || len(data) > 2 && data[0] == 0xFF && data[1]&0xE0 == 0xE0 && data[1]&0x06 != 0:
		return Sniffed{Kind: KindAudio, MIME: "audio/mpeg"}
	case len(data) > 12 && bytes.Equal(data[:4], []byte("RIFF")) && bytes.Equal(data[8:12], []byte("WAVE")):
		return Sniffed{Kind: KindAudio, MIME: "audio/wav"}
	case len(data) > 12 && bytes.Equal(data[4:8], []byte("ftyp")):
		brand := string(data[8:12])
		if strings.HasPrefix(brand, "M4A") || strings.HasPrefix(brand, "M4B") {
			return Sniffed{Kind: KindAudio, MIME: "audio/mp4"}
		}
		if strings.HasPrefix(mime, "audio/") {
			return Sniffed{Kind: KindAudio, MIME: "audio/mp4"}
		}
		return Sniffed{Kind: KindVideo, MIME: "video/mp4"}
	case bytes.HasPrefix(data, []byte("\x1A\x45\xDF\xA3")): // Matroska / WebM
		if strings.HasPrefix(mime, "audio/") {
			return Sniffed{Kind: KindAudio, MIME: "audio/webm"}
		}
		return Sniffed{Kind: KindVideo, MIME: "video/webm"}
	case bytes.HasPrefix(data, []byte("PK\x03\x04")):
		if isDOCX(data) {
			return Sniffed{Kind: KindDOCX, MIME: "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}
		}
		return Sniffed{Kind: KindArchive, MIME: "application/zip"}
	}
	ct := http.DetectContentType(data)
	switch {
	case strings.HasPrefix(ct, "image/"):
		return Sniffed{Kind: KindImage, MIME: ct}
	case strings.HasPrefix(ct, "audio/"):
		return Sniffed{Kind: KindAudio, MIME: ct}
	case strings.HasPrefix(ct, "video/"):
		return Sniffed{Kind: KindVideo, MIME: ct}
	case strings.HasPrefix(ct, "text/html"):
		return Sniffed{Kind: KindHTML, MIME: "text/html"}
	}
	if looksText(data) {
		return Sniffed{Kind: KindText, MIME: textMIME(mime, name)}
	}
	if ct == "application/x-gzip" || ct == "application/x-rar-compressed" || ct == "application/zip" {
		return Sniffed{Kind: KindArchive, MIME: ct}
	}
	return Sniffed{Kind: KindBinary, MIME: ct}
}

// isDOCX reports whether the zip holds word/document.xml (reading the
// central directory only).
func isDOCX(data []byte) bool {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return false
	}
	for _, f := range zr.File {
		if f.Name == "word/document.xml" {
			return true
		}
	}
	return false
}

// looksText: valid UTF-8 (the first 64 KiB, a cut rune at the end allowed)
// without NUL bytes.
func looksText(data []byte) bool {
	head := data
	if len(head) > 64<<10 {
		head = head[:64<<10]
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	for i := 0; i < 3 && len(head) > 0 && !utf8.Valid(head); i++ {
		head = head[:len(head)-1]
	}
	return utf8.Valid(head)
}

func textMIME(mime, name string) string {
	switch strings.ToLower(path.Ext(name)) {
	case ".md", ".markdown":
		return "text/markdown"
	case ".csv":
		return "text/csv"
	case ".json":
		return "application/json"
	}
	if strings.HasPrefix(mime, "text/") || mime == "application/json" {
		if i := strings.IndexByte(mime, ';'); i >= 0 {
			mime = mime[:i]
		}
		return strings.TrimSpace(mime)
	}
	return "text/plain"
}

// claimedKind is the kind the name or the announced MIME type promises
// ("" when they promise nothing definite).
func claimedKind(mime, name string) Kind {
	switch strings.ToLower(path.Ext(name)) {
	case ".pdf":
		return KindPDF
	case ".docx":
		return KindDOCX
	case ".png", ".jpg", ".jpeg", ".gif", ".webp":
		return KindImage
	case ".ogg", ".oga", ".opus", ".mp3", ".wav", ".m4a", ".flac":
		return KindAudio
	case ".txt", ".md", ".markdown", ".csv", ".json":
		return KindText
	case ".html", ".htm":
		return KindHTML
	}
	switch {
	case mime == "application/pdf":
		return KindPDF
	case strings.HasPrefix(mime, "image/"):
		return KindImage
	case strings.HasPrefix(mime, "audio/"):
		return KindAudio
	}
	return ""
}
