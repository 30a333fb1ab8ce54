package email

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/channels"
)

// Files back to the chat (send_file): a file goes out as a mail of its own
// in the chat's thread, threaded like an answer (Re: subject, In-Reply-To,
// References; a target without a thread starts one, the caption's first
// line, else the file's name, as its subject). The mail is
// multipart/mixed: the caption as text/plain with an HTML alternative (the
// caption escaped, never markup), then the file as an attachment —
// Content-Disposition: attachment with its name (RFC 2231 for a name that
// is not ASCII, and RFC 2047 encoded words, base64, in Content-Type's name,
// which older clients read), the bytes in base64 in lines of 76 characters. The
// file's type is its Content-Type, except types a mail client could render
// as active content in the mail (HTML, XHTML, SVG) or read as mail or
// structure (message/*, multipart/*), which are sent as
// application/octet-stream: the name keeps its extension, so the file opens
// as what it is once saved. The Message-ID comes from the delivery's nonce
// and the installation's salt, as an answer's, so a resend after a crash
// carries the same Message-ID; SMTP failures are classified as an answer's.

// DefaultMaxFileSize is the largest file sent by default. Mail carries a
// file in base64: 4 bytes for every 3, plus a line end every 76 characters,
// 1.37 times its size in all. Common submission limits are 25 MB for the
// whole mail (Gmail; others are larger, a few smaller); 17 MiB of file is
// 24.4 MB in the mail, leaving room for the header and the caption. A
// server that advertises a lower SIZE refuses the mail before its data is
// sent, a permanent failure the chat is told of.
const DefaultMaxFileSize = 17 << 20

var _ channels.FileSender = (*Adapter)(nil)

// MaxFileSize implements channels.FileSender.
func (a *Adapter) MaxFileSize() int64 { return a.opts.MaxFileSize }

// SendFile implements channels.FileSender; it returns the mail's
// Message-ID.
func (a *Adapter) SendFile(ctx context.Context, f channels.OutgoingFile) (string, error) {
	name := fileName(f.Name)
	if n := int64(len(f.Data)); n > a.opts.MaxFileSize {
		return "", channels.Permanent(fmt.Errorf("email: %s is %d bytes; at most %d are mailed", name, n, a.opts.MaxFileSize))
	}
	caption := strings.TrimSpace(f.Caption)
	subject := firstLine(caption, 78)
	if subject == "" {
		subject = name
	}
	m, err := a.prepare(ctx, f.Target, f.ReplyTo, f.Nonce, subject)
	if err != nil {
		return "", err
	}
	raw, err := composeFile(m.h, caption, name, f.MIME, f.Data)
	if err != nil {
		return "", channels.Permanent(fmt.Errorf("email: compose the mail of %s: %w", name, err))
	}
	if err := a.submit(ctx, m.to, raw); err != nil {
		return "", err
	}
	a.recordSent(ctx, f.Target, m)
	return m.h.id, nil
}

// composeFile writes the multipart/mixed mail of a file (CRLF line ends):
// the caption, when there is one, as text with an HTML alternative, then
// the attachment.
func composeFile(h mailHeader, caption, name, mimeType string, data []byte) ([]byte, error) {
	var b bytes.Buffer
	mixed := boundaryOf(h, "sb-mixed-")
	writeHeader(&b, h, `multipart/mixed; boundary="`+mixed+`"`)
	mw := multipart.NewWriter(&b)
	if err := mw.SetBoundary(mixed); err != nil {
		return nil, err
	}
	if caption != "" {
		alt := boundaryOf(h, "sb-")
		pw, err := mw.CreatePart(textproto.MIMEHeader{"Content-Type": {`multipart/alternative; boundary="` + alt + `"`}})
		if err != nil {
			return nil, err
		}
		writeAlternative(pw, alt, caption, captionHTML(caption))
	}
	ct, disp := attachmentHeader(name, mimeType)
	pw, err := mw.CreatePart(textproto.MIMEHeader{"Content-Type": {ct}, "Content-Disposition": {disp},
		"Content-Transfer-Encoding": {"base64"}})
	if err != nil {
		return nil, err
	}
	writeBase64(pw, data)
	if err := mw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// attachmentHeader returns the Content-Type and Content-Disposition of an
// attachment named name (see the comment at the top for the type).
func attachmentHeader(name, mimeType string) (string, string) {
	mt, params, err := mime.ParseMediaType(mimeType)
	if err != nil || !safeAttachmentType(mt) {
		mt, params = "application/octet-stream", nil
	}
	tp := map[string]string{"name": mime.BEncoding.Encode("utf-8", name)}
	if cs := params["charset"]; cs != "" && strings.HasPrefix(mt, "text/") {
		tp["charset"] = cs
	}
	ct := mime.FormatMediaType(mt, tp)
	if ct == "" { // a charset FormatMediaType cannot write
		ct = mime.FormatMediaType(mt, map[string]string{"name": tp["name"]})
	}
	return ct, mime.FormatMediaType("attachment", map[string]string{"filename": name})
}

// safeAttachmentType reports whether an attachment may keep its media type.
func safeAttachmentType(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "multipart/"), strings.HasPrefix(mt, "message/"):
		return false
	case mt == "text/html", mt == "application/xhtml+xml", mt == "image/svg+xml":
		return false
	}
	return strings.Count(mt, "/") == 1
}

// maxNameBytes bounds the name in the header: percent-encoded (RFC 2231)
// or Q-encoded it stays well within a header line's 998 characters.
const maxNameBytes = 150

// fileName is a file's name fit for a header: valid UTF-8 without control
// characters, at most maxNameBytes (cut before its extension), "file" when
// nothing is left.
func fileName(name string) string {
	name = strings.ToValidUTF8(name, "_")
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, name)
	if name = strings.TrimSpace(name); name == "" {
		return "file"
	}
	if len(name) <= maxNameBytes {
		return name
	}
	ext := path.Ext(name)
	if len(ext) > 20 {
		ext = ""
	}
	stem := name[:maxNameBytes-len(ext)]
	for !utf8.ValidString(stem) {
		stem = stem[:len(stem)-1]
	}
	return stem + ext
}

// captionHTML is the HTML alternative of a plain-text caption: escaped, in
// the block answers use.
func captionHTML(caption string) string {
	return "<!DOCTYPE html>\r\n<html><head><meta charset=\"utf-8\"></head><body>" +
		"<div style=\"white-space: pre-wrap; font-family: sans-serif\">" + html.EscapeString(caption) + "</div></body></html>\r\n"
}

// base64Line is the length of a base64 line in mail (RFC 2045, 6.8).
const base64Line = 76

// writeBase64 writes data in base64, in lines of 76 characters ending in
// CRLF.
func writeBase64(w io.Writer, data []byte) {
	enc := make([]byte, base64.StdEncoding.EncodedLen(len(data)))
	base64.StdEncoding.Encode(enc, data)
	for len(enc) > 0 {
		n := min(len(enc), base64Line)
		_, _ = w.Write(enc[:n])
		_, _ = w.Write([]byte("\r\n"))
		enc = enc[n:]
	}
}
