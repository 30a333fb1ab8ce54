package email

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/emersion/go-smtp"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakesmtp"
)

// fileSender is the adapter as the shared delivery path sees it.
func fileSender(t *testing.T, a *Adapter) channels.FileSender {
	t.Helper()
	fs, ok := channels.Channel(a).(channels.FileSender)
	if !ok {
		t.Fatal("the email adapter sends no files (it does not implement channels.FileSender)")
	}
	return fs
}

// mailFile is an attachment as a recipient's client reads it.
type mailFile struct {
	name, disposition, ctype string
	typeName                 string // Content-Type's name, RFC 2047 decoded
	data                     []byte
	lines                    []string // the base64 body's lines
}

// readMail is a sent mail as a recipient's client reads it: its header,
// its text and HTML (the first of each) and its attachments.
type readMail struct {
	header     mail.Header
	text, html string
	files      []mailFile
	longLines  int // lines over RFC 5322's 998 characters
}

func parseMail(data []byte) (readMail, error) {
	var out readMail
	for _, l := range strings.Split(string(data), "\r\n") {
		if len(l) > 998 {
			out.longLines++
		}
	}
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		return out, err
	}
	out.header = msg.Header
	var walk func(ct string, h func(string) string, body io.Reader) error
	walk = func(ct string, h func(string) string, body io.Reader) error {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil {
			return fmt.Errorf("Content-Type %q: %w", ct, err)
		}
		if strings.HasPrefix(mt, "multipart/") {
			mr := multipart.NewReader(body, params["boundary"])
			for {
				p, err := mr.NextPart() // decodes quoted-printable
				if errors.Is(err, io.EOF) {
					return nil
				}
				if err != nil {
					return err
				}
				if err := walk(p.Header.Get("Content-Type"), p.Header.Get, p); err != nil {
					return err
				}
			}
		}
		raw, err := io.ReadAll(body)
		if err != nil {
			return err
		}
		disp, dparams, _ := mime.ParseMediaType(h("Content-Disposition"))
		if disp == "attachment" {
			f := mailFile{name: dparams["filename"], disposition: disp, ctype: mt}
			if f.typeName, err = new(mime.WordDecoder).DecodeHeader(params["name"]); err != nil {
				return fmt.Errorf("Content-Type name %q: %w", params["name"], err)
			}
			if cte := h("Content-Transfer-Encoding"); cte != "base64" {
				return fmt.Errorf("attachment %q in %q, not base64", f.name, cte)
			}
			f.lines = strings.Fields(string(raw))
			if f.data, err = base64.StdEncoding.DecodeString(strings.Join(f.lines, "")); err != nil {
				return err
			}
			out.files = append(out.files, f)
			return nil
		}
		text := strings.ReplaceAll(string(raw), "\r\n", "\n")
		switch {
		case mt == "text/plain" && out.text == "":
			out.text = text
		case mt == "text/html" && out.html == "":
			out.html = text
		}
		return nil
	}
	return out, walk(msg.Header.Get("Content-Type"), msg.Header.Get, msg.Body)
}

// TestSendFileMail: a file is a mail in the chat's thread — Re: subject,
// In-Reply-To, References — that a client reads as the caption (text and
// an escaped HTML alternative) and an attachment with the exact name and
// bytes, in base64 lines of 76 characters; a type a client could render
// as active content arrives as application/octet-stream.
func TestSendFileMail(t *testing.T) {
	w := newWorld(t)
	sk := newSink()
	a := running(t, w.options(), sk)
	fs := fileSender(t, a)
	id := w.deliver(t, mailSpec{subject: "Quarterly numbers", text: "send me the report"})
	m := sk.waitText(t, "send me the report")[0]

	binary := make([]byte, 1000)
	_, _ = rand.Read(binary)
	long := strings.Repeat("ü", 120) + ".pdf" // 244 bytes
	tests := []struct {
		name, file, mime, caption string
		data                      []byte
		wantName, wantType        string
	}{
		{"a document with a caption", "report.pdf", "application/pdf", "Q3 report <b>final</b>\nsecond line", binary, "report.pdf", "application/pdf"},
		{"non-ASCII and a quote in the name", `Über "Plan" ñ.csv`, "text/csv; charset=utf-8", "the plan", []byte("a,b\n1,2\n"), `Über "Plan" ñ.csv`, "text/csv"},
		{"no caption", "chart.png", "image/png", "", []byte("\x89PNG\r\n\x1a\nnot really"), "chart.png", "image/png"},
		{"HTML is not trusted inline", "page.html", "text/html; charset=utf-8", "a page", []byte("<script>alert(1)</script>"), "page.html", "application/octet-stream"},
		{"an unreadable type", "x.bin", "not a type", "", []byte{0, 1, 2}, "x.bin", "application/octet-stream"},
		{"a long name keeps its extension", long, "application/pdf", "", []byte("%PDF"), strings.Repeat("ü", 73) + ".pdf", "application/pdf"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(w.smtp.Messages())
			mid, err := fs.SendFile(context.Background(), channels.OutgoingFile{Target: m.Target(), Name: tc.file, Path: "out/" + tc.file,
				MIME: tc.mime, Data: tc.data, Caption: tc.caption, Nonce: fmt.Sprintf("turn-1/%d", 1<<20+i), ReplyTo: m.MessageID})
			if err != nil {
				t.Fatalf("SendFile: %v", err)
			}
			msgs := w.smtp.Messages()
			if len(msgs) != before+1 {
				t.Fatalf("%d mails sent, want 1", len(msgs)-before)
			}
			sent := msgs[before]
			got, err := parseMail(sent.Data)
			if err != nil {
				t.Fatalf("the mail does not parse: %v\n%s", err, sent.Data)
			}
			h := got.header
			if len(sent.To) != 1 || sent.To[0] != "ada@example.org" || decodeWords(h.Get("Subject")) != "Re: Quarterly numbers" ||
				h.Get("In-Reply-To") != "<"+id+">" || !strings.HasPrefix(h.Get("References"), "<"+id+">") ||
				h.Get("Message-Id") != "<"+mid+">" || h.Get("Auto-Submitted") != "auto-replied" {
				t.Errorf("not a reply in the thread: to %v, Subject %q, In-Reply-To %q, References %q, Message-ID %q (SendFile returned %q), Auto-Submitted %q",
					sent.To, h.Get("Subject"), h.Get("In-Reply-To"), h.Get("References"), h.Get("Message-Id"), mid, h.Get("Auto-Submitted"))
			}
			if mt, _, _ := mime.ParseMediaType(h.Get("Content-Type")); mt != "multipart/mixed" {
				t.Errorf("Content-Type %q, want multipart/mixed", h.Get("Content-Type"))
			}
			if len(got.files) != 1 {
				t.Fatalf("%d attachments, want 1:\n%s", len(got.files), sent.Data)
			}
			f := got.files[0]
			if f.name != tc.wantName || f.typeName != tc.wantName || !bytes.Equal(f.data, tc.data) || f.ctype != tc.wantType {
				t.Errorf("attachment %q (Content-Type %s, name %q; %q), want %q (%s; %q)", f.name, f.ctype, f.typeName, f.data,
					tc.wantName, tc.wantType, tc.data)
			}
			for j, l := range f.lines {
				if len(l) > 76 || j < len(f.lines)-1 && len(l) != 76 {
					t.Errorf("base64 line %d is %d characters; lines are 76", j, len(l))
				}
			}
			if got.longLines > 0 {
				t.Errorf("%d lines over 998 characters", got.longLines)
			}
			if strings.TrimSpace(got.text) != tc.caption {
				t.Errorf("text %q, want the caption %q", got.text, tc.caption)
			}
			if tc.caption != "" && (!strings.Contains(got.html, "&lt;b&gt;final") && strings.Contains(tc.caption, "<b>") ||
				strings.Contains(got.html, "<b>final")) {
				t.Errorf("the HTML alternative does not escape the caption: %s", got.html)
			}
		})
	}
	if !utf8.ValidString(tests[len(tests)-1].wantName) || len(tests[len(tests)-1].wantName) > maxNameBytes {
		t.Fatal("the long-name case expects a name the adapter cannot produce")
	}
}

// TestSendFileErrors: a file over the limit is refused (permanent) before
// anything is submitted, as is a mail over the server's SIZE; SMTP
// failures are classified as an answer's; and a resend of a file whose
// answer was lost carries the first attempt's Message-ID.
func TestSendFileErrors(t *testing.T) {
	w := newWorld(t)
	o := w.options()
	o.MaxFileSize = 2000
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	fs := fileSender(t, a)
	if fs.MaxFileSize() != 2000 {
		t.Errorf("MaxFileSize = %d, want the configured 2000", fs.MaxFileSize())
	}
	small := fakesmtp.Start(t, fakesmtp.Options{Username: botAddr, Password: smtpPass, MaxMessageBytes: 1500})
	so := w.options()
	so.SMTPURL = small.URL()
	sa, err := New(so)
	if err != nil {
		t.Fatal(err)
	}
	to := channels.Target{Channel: Name, ChatID: "ada@example.org", ThreadID: "root-9@example.org"}
	tests := []struct {
		name   string
		a      *Adapter
		srv    *fakesmtp.Server
		setup  func()
		size   int
		target channels.Target
		want   channels.SendErrorKind
		errHas string
	}{
		{"over the limit", a, w.smtp, func() {}, 2001, to, channels.KindPermanent, "at most 2000"},
		{"over the server's SIZE", sa, small, func() {}, 1400, to, channels.KindPermanent, "larger than the server's limit"},
		{"4xx busy", a, w.smtp, func() { w.smtp.FailNext(1, 451, smtp.EnhancedCode{4, 7, 1}, "try again later") }, 10, to, channels.KindTemporary, "451"},
		{"5xx refused", a, w.smtp, func() { w.smtp.FailNext(1, 552, smtp.EnhancedCode{5, 3, 4}, "too big") }, 10, to, channels.KindPermanent, "552"},
		{"answer lost after the data", a, w.smtp, func() { w.smtp.DropAfterNext(1) }, 2000, to, channels.KindAmbiguous, "end of DATA"},
		{"not an address", a, w.smtp, func() {}, 10, channels.Target{Channel: Name, ChatID: "ada@example.org\r\nBcc: eve@example.net"}, channels.KindPermanent, "not an email address"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(tc.srv.Messages())
			tc.setup()
			f := channels.OutgoingFile{Target: tc.target, Name: "data.bin", Path: "data.bin", MIME: "application/octet-stream",
				Data: bytes.Repeat([]byte{'x'}, tc.size), Nonce: fmt.Sprintf("turn-2/%d", 1<<20+i)}
			_, err := fileSender(t, tc.a).SendFile(context.Background(), f)
			if kind, _ := channels.ClassifyError(err); err == nil || kind != tc.want || !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("SendFile = %v (%s), want %s saying %q", err, kind, tc.want, tc.errHas)
			}
			if strings.Contains(err.Error(), smtpPass) {
				t.Errorf("the error shows the password: %v", err)
			}
			if tc.want != channels.KindAmbiguous {
				if n := len(tc.srv.Messages()); n != before {
					t.Errorf("%d mails accepted", n-before)
				}
				return
			}
			first := tc.srv.Messages()[before]
			again, err := fileSender(t, tc.a).SendFile(context.Background(), f)
			if err != nil {
				t.Fatalf("resend: %v", err)
			}
			second := tc.srv.Messages()[before+1]
			if first.Header.Get("Message-Id") != second.Header.Get("Message-Id") || second.Header.Get("Message-Id") != "<"+again+">" {
				t.Errorf("the resend has Message-ID %s (returned %s), the first attempt %s",
					second.Header.Get("Message-Id"), again, first.Header.Get("Message-Id"))
			}
		})
	}
}

// TestMaxFileSizeDefault: without a setting, the limit is the documented
// default, whose mail stays within a 25 MB submission limit.
func TestMaxFileSizeDefault(t *testing.T) {
	a, err := New(Options{Address: botAddr, IMAPURL: "imap://127.0.0.1:1", SMTPURL: "smtp://127.0.0.1:1"}) // never connects
	if err != nil {
		t.Fatal(err)
	}
	got := fileSender(t, a).MaxFileSize()
	if got != DefaultMaxFileSize {
		t.Errorf("MaxFileSize = %d, want DefaultMaxFileSize %d", got, DefaultMaxFileSize)
	}
	if encoded := (got + 2) / 3 * 4 * 78 / 76; encoded > 25_000_000-64<<10 {
		t.Errorf("a file of %d bytes is %d bytes in base64: no room below 25 MB for the rest of the mail", got, encoded)
	}
}
