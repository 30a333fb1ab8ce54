package email

import (
	"encoding/base64"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/dovecottest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakesmtp"
)

const (
	botAddr    = "bot@example.com"
	botUser    = "bot"
	botPass    = "imap-secret-1"
	smtpPass   = "smtp-secret-2"
	authServID = "mx.example.com"
)

// world is a dovecot holding the bot's mailbox and a submission server.
type world struct {
	imap *dovecottest.Server
	smtp *fakesmtp.Server
	seq  atomic.Int64
}

func newWorld(t *testing.T) *world {
	t.Helper()
	return &world{
		imap: dovecottest.Start(t, dovecottest.User{Name: botUser, Password: botPass}),
		smtp: fakesmtp.Start(t, fakesmtp.Options{Username: botAddr, Password: smtpPass}),
	}
}

// options are the adapter's options against w.
func (w *world) options() Options {
	return Options{
		Address: botAddr, IMAPURL: w.imap.URL(), IMAPUsername: botUser, IMAPPassword: botPass,
		SMTPURL: w.smtp.URL(), SMTPPassword: smtpPass,
		RequireAuthResults: true, AuthServID: authServID,
		PollInterval: 200 * time.Millisecond, RetryMin: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond,
	}
}

// mailSpec is a test mail.
type mailSpec struct {
	from, subject, text string
	id                  string   // Message-ID without brackets; generated when empty
	refs                []string // References (and In-Reply-To: the last)
	headers             []string // extra header lines, in order, above the rest
	authResults         string   // "" = a passing DMARC result of authServID; "-" = none
	image               []byte   // an attached image/jpeg
	more                [][]byte // further attached images
}

// raw builds the mail as a delivery agent files it.
func (w *world) raw(m mailSpec) ([]byte, string) {
	if m.id == "" {
		m.id = fmt.Sprintf("m%d.%d@example.org", time.Now().UnixNano(), w.seq.Add(1))
	}
	if m.from == "" {
		m.from = "Ada <ada@example.org>"
	}
	if m.subject == "" {
		m.subject = "A question"
	}
	var b strings.Builder
	for _, h := range m.headers {
		b.WriteString(h + "\r\n")
	}
	switch m.authResults {
	case "":
		_, dom, _ := strings.Cut(strings.Trim(m.from[strings.LastIndex(m.from, "<")+1:], "<>"), "@")
		fmt.Fprintf(&b, "Authentication-Results: %s; spf=pass smtp.mailfrom=%s; dkim=pass header.d=%s; dmarc=pass header.from=%s\r\n", authServID, dom, dom, dom)
	case "-":
	default:
		b.WriteString("Authentication-Results: " + m.authResults + "\r\n")
	}
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <%s>\r\n", m.from, botAddr, m.subject,
		time.Now().Format(time.RFC1123Z), m.id)
	if len(m.refs) > 0 {
		fmt.Fprintf(&b, "In-Reply-To: <%s>\r\nReferences: <%s>\r\n", m.refs[len(m.refs)-1], strings.Join(m.refs, "> <"))
	}
	b.WriteString("MIME-Version: 1.0\r\n")
	if m.image == nil && m.more == nil {
		b.WriteString("Content-Type: text/plain; charset=utf-8\r\n\r\n" + m.text + "\r\n")
		return []byte(b.String()), m.id
	}
	b.WriteString("Content-Type: multipart/mixed; boundary=\"XYZ\"\r\n\r\n--XYZ\r\n")
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\n\r\n" + m.text + "\r\n--XYZ\r\n")
	for i, img := range append([][]byte{m.image}, m.more...) {
		if img == nil {
			continue
		}
		name := fmt.Sprintf("photo%d.jpg", i)
		if i == 0 {
			name = "photo.jpg"
		}
		fmt.Fprintf(&b, "Content-Type: image/jpeg; name=%q\r\nContent-Disposition: attachment; filename=%q\r\nContent-Transfer-Encoding: base64\r\n\r\n", name, name)
		enc := base64.StdEncoding.EncodeToString(img)
		for len(enc) > 76 {
			b.WriteString(enc[:76] + "\r\n")
			enc = enc[76:]
		}
		b.WriteString(enc + "\r\n--XYZ\r\n")
	}
	s := strings.TrimSuffix(b.String(), "\r\n") + "--\r\n"
	return []byte(s), m.id
}

// deliver files m into the bot's INBOX and returns its Message-ID.
func (w *world) deliver(t testing.TB, m mailSpec) string {
	t.Helper()
	raw, id := w.raw(m)
	w.imap.Append(t, botUser, "INBOX", raw)
	return id
}

// images returns n small distinct JPEG-ish images.
func images(n, size int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		b := []byte{0xff, 0xd8, 0xff, 0xe0}
		for j := range size {
			b = append(b, byte(i*31+j))
		}
		out[i] = append(b, 0xff, 0xd9)
	}
	return out
}
