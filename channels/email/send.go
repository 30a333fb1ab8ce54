package email

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/markup"
)

// This file is the way out: Format (one mail per answer, Markdown kept as
// the chunk's text), Send (a multipart/alternative mail with the thread's
// headers, submitted over SMTP) and the classification of SMTP failures.

// ChunkLimit is the most Markdown characters one mail carries; a longer
// answer (far beyond any real one) becomes several mails in the thread.
const ChunkLimit = 50000

// Format keeps the Markdown as each chunk's Text (Send renders the HTML
// alternative from it) and its plain rendering as Plain.
func (a *Adapter) Format(md string) []channels.Chunk {
	pieces := markup.Split(md, ChunkLimit)
	out := make([]channels.Chunk, 0, len(pieces))
	for _, p := range pieces {
		out = append(out, channels.Chunk{Text: p, Plain: markup.Plain(p)})
	}
	return out
}

// Send mails one chunk to the target's address, in its thread when the
// target names one, and returns the mail's Message-ID.
func (a *Adapter) Send(ctx context.Context, out channels.Outgoing) (string, error) {
	subject := firstLine(out.Plain, 78)
	if subject == "" {
		subject = "Message"
	}
	m, err := a.prepare(ctx, out.Target, out.ReplyTo, out.Nonce, subject)
	if err != nil {
		return "", err
	}
	if err := a.submit(ctx, m.to, compose(m.h, out.Plain, renderHTML(out.Text))); err != nil {
		return "", err
	}
	a.recordSent(ctx, out.Target, m)
	return m.h.id, nil
}

// outMail is a mail about to be sent: its recipient, its header and the
// thread it joins.
type outMail struct {
	to string
	h  mailHeader
	th thread
}

// prepare checks target's address and makes the header of a mail to it:
// the Message-ID from nonce, and in the target's thread (when it names one)
// "Re: <subject>", In-Reply-To and References; otherwise a new thread
// under subject.
func (a *Adapter) prepare(ctx context.Context, target channels.Target, replyTo, nonce, subject string) (outMail, error) {
	to, err := recipient(target.ChatID)
	if err != nil {
		return outMail{}, channels.Permanent(err)
	}
	mid, err := a.messageID(ctx, nonce)
	if err != nil {
		return outMail{}, channels.Temporary(err)
	}
	m := outMail{to: to, h: mailHeader{from: a.opts.Address, to: to, id: mid, date: a.opts.Now()}}
	tid := target.ThreadID
	if tid == "" {
		m.h.subject, m.h.autoSubmitted = subject, "auto-generated"
		return m, nil
	}
	var found bool
	m.th, found, err = a.loadThread(ctx, to, tid)
	if err != nil {
		return outMail{}, channels.Temporary(fmt.Errorf("load the thread: %w", err))
	}
	if !found && strings.Contains(tid, "@") {
		m.th.Refs = []string{tid}
	}
	m.h.refs = m.th.Refs
	m.h.inReplyTo = safeID(replyTo)
	if m.h.inReplyTo == "" && len(m.th.Refs) > 0 {
		m.h.inReplyTo = m.th.Refs[len(m.th.Refs)-1]
	}
	root := stripRe(m.th.Subject)
	if root == "" {
		root = "your message"
	}
	m.h.subject, m.h.autoSubmitted = "Re: "+root, "auto-replied"
	return m, nil
}

// recordSent adds a sent mail to its thread, so later sends in the thread
// reference it too; a failure here costs only a reference.
func (a *Adapter) recordSent(ctx context.Context, target channels.Target, m outMail) {
	key, th := target.ThreadID, m.th
	if key == "" {
		key, th = m.h.id, thread{Subject: m.h.subject}
	}
	th.Refs = appendRefs(append(th.Refs, m.h.id), maxRefs)
	if err := a.saveThread(ctx, m.to, key, th); err != nil {
		a.log.Warn("email: could not record the sent mail in its thread", "err", err)
	}
}

// recipient checks a target's chat id: a bare address.
func recipient(chatID string) (string, error) {
	a, err := mail.ParseAddress(chatID)
	if err != nil || a.Address != chatID || strings.ContainsAny(chatID, " \t\r\n<>") {
		return "", fmt.Errorf("email: %q is not an email address (targets are email:<address>[:<thread>])", clip(chatID, 80))
	}
	return strings.ToLower(chatID), nil
}

// safeID is a message id fit for a header, or "".
func safeID(id string) string {
	id = strings.Trim(id, "<>")
	if id == "" || len(id) > 250 || strings.ContainsAny(id, " \t\r\n<>\"") || !strings.Contains(id, "@") {
		return ""
	}
	return id
}

// saltKey keeps the installation's Message-ID salt.
const saltKey = "email/message-id-salt"

// messageID derives the mail's Message-ID from the chunk's nonce and the
// installation's salt, so a resend of the same chunk (after a restart, from
// another replica) carries the same id, while turn ids — which start again
// in a fresh data directory and are alike in every bot — never give two
// mails one id (mail stores drop a mail whose Message-ID they already have).
func (a *Adapter) messageID(ctx context.Context, nonce string) (string, error) {
	seed := make([]byte, 16)
	_, _ = rand.Read(seed)
	if nonce != "" {
		salt, err := a.salt(ctx)
		if err != nil {
			return "", err
		}
		seed = []byte(salt + "\x00" + a.opts.Address + "\x00" + nonce)
	}
	sum := sha256.Sum256(seed)
	_, domain, _ := strings.Cut(a.opts.Address, "@")
	return "sb." + hex.EncodeToString(sum[:16]) + "@" + domain, nil
}

// salt returns the installation's salt, made on first use.
func (a *Adapter) salt(ctx context.Context) (string, error) {
	a.saltMu.Lock()
	defer a.saltMu.Unlock()
	if a.saltVal != "" {
		return a.saltVal, nil
	}
	b, ok, err := a.opts.KV.KVGet(ctx, saltKey)
	if err != nil {
		return "", fmt.Errorf("load the Message-ID salt: %w", err)
	}
	if !ok || len(b) == 0 {
		r := make([]byte, 16)
		_, _ = rand.Read(r)
		b = []byte(hex.EncodeToString(r))
		// Replicas racing here: the last write wins and the loser's first
		// mail has an id nobody resends; harmless.
		if err := a.opts.KV.KVPut(ctx, saltKey, b); err != nil {
			return "", fmt.Errorf("save the Message-ID salt: %w", err)
		}
	}
	a.saltVal = string(b)
	return a.saltVal, nil
}

// firstLine is the first non-empty line of s, clipped to n runes.
func firstLine(s string, n int) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			return clip(l, n)
		}
	}
	return ""
}

// renderHTML renders a chunk's Markdown as the HTML alternative: the
// markup package's escaping renderer (raw HTML shows as text), in a block
// that keeps its line breaks.
func renderHTML(md string) string {
	body := markup.TelegramHTML(md)
	body = strings.ReplaceAll(body, `href="tg://`, `href="#tg://`)
	return "<!DOCTYPE html>\r\n<html><head><meta charset=\"utf-8\"></head><body>" +
		"<div style=\"white-space: pre-wrap; font-family: sans-serif\">" + body + "</div></body></html>\r\n"
}

// mailHeader is what compose writes in a mail's header.
type mailHeader struct {
	from, to, subject, id, inReplyTo, autoSubmitted string
	refs                                            []string
	date                                            time.Time
}

// compose writes a multipart/alternative mail (CRLF line ends).
func compose(h mailHeader, text, html string) []byte {
	var b bytes.Buffer
	boundary := boundaryOf(h, "sb-")
	writeHeader(&b, h, `multipart/alternative; boundary="`+boundary+`"`)
	writeAlternative(&b, boundary, text, html)
	return b.Bytes()
}

// boundaryOf is a MIME boundary for a mail: prefix and a hash of its
// Message-ID (prefixes other than "sb-" must not start with a hex digit,
// so that no boundary is the beginning of another).
func boundaryOf(h mailHeader, prefix string) string {
	sum := sha256.Sum256([]byte(h.id))
	return prefix + hex.EncodeToString(sum[:12])
}

// writeAlternative writes the body of a multipart/alternative entity:
// text and html, each quoted-printable, and the closing delimiter.
func writeAlternative(w io.Writer, boundary, text, html string) {
	part := func(ct, body string) {
		_, _ = io.WriteString(w, "--"+boundary+"\r\n")
		_, _ = io.WriteString(w, "Content-Type: "+ct+"; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n")
		qw := quotedprintable.NewWriter(w)
		_, _ = qw.Write([]byte(strings.ReplaceAll(body, "\r\n", "\n")))
		_ = qw.Close()
		_, _ = io.WriteString(w, "\r\n")
	}
	part("text/plain", text)
	part("text/html", html)
	_, _ = io.WriteString(w, "--"+boundary+"--\r\n")
}

// writeHeader writes h as a mail's header, Content-Type contentType, and
// the blank line that ends it.
func writeHeader(b *bytes.Buffer, h mailHeader, contentType string) {
	hdr := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	hdr("From", "<"+h.from+">")
	hdr("To", "<"+h.to+">")
	hdr("Subject", mime.QEncoding.Encode("utf-8", h.subject))
	hdr("Date", h.date.Format(time.RFC1123Z))
	hdr("Message-ID", "<"+h.id+">")
	if h.inReplyTo != "" {
		hdr("In-Reply-To", "<"+h.inReplyTo+">")
	}
	if len(h.refs) > 0 {
		var refs []string
		for _, r := range h.refs {
			if r = safeID(r); r != "" {
				refs = append(refs, "<"+r+">")
			}
		}
		if len(refs) > 0 {
			hdr("References", strings.Join(refs, "\r\n "))
		}
	}
	hdr("MIME-Version", "1.0")
	hdr("Auto-Submitted", h.autoSubmitted)
	hdr("X-Auto-Response-Suppress", "All")
	hdr("Content-Type", contentType)
	b.WriteString("\r\n")
}

// submit hands raw to the submission server for to. Failures are
// classified: refused (5xx) permanent, 4xx and anything before the data
// went out temporary, a lost answer to the end of the data ambiguous.
func (a *Adapter) submit(ctx context.Context, to string, raw []byte) error {
	ctx, cancel := context.WithCancel(ctx) // releases dialSMTP's watch of ctx
	defer cancel()
	c, err := a.dialSMTP(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	if err := c.Mail(a.opts.Address, nil); err != nil {
		return classifySMTP("MAIL FROM", err, false)
	}
	if err := c.Rcpt(to, nil); err != nil {
		return classifySMTP("RCPT TO", err, false)
	}
	if max, ok := c.MaxMessageSize(); ok && max > 0 && len(raw) > max {
		return channels.Permanent(fmt.Errorf("email: the mail (%d bytes) is larger than the server's limit of %d", len(raw), max))
	}
	w, err := c.Data()
	if err != nil {
		return classifySMTP("DATA", err, false)
	}
	if _, err := w.Write(raw); err != nil {
		return classifySMTP("DATA", err, true)
	}
	if err := w.Close(); err != nil {
		return classifySMTP("end of DATA", err, true)
	}
	_ = c.Quit()
	return nil
}

// dialSMTP connects, secures (per the URL) and authenticates; the
// connection is closed when ctx ends.
func (a *Adapter) dialSMTP(ctx context.Context) (*smtp.Client, error) {
	u, err := parseServerURL(a.opts.SMTPURL, "smtps", "smtp")
	if err != nil {
		return nil, channels.Permanent(err)
	}
	d := net.Dialer{Timeout: a.opts.Timeout}
	conn, err := d.DialContext(ctx, "tcp", u.addr)
	if err != nil {
		return nil, channels.Temporary(fmt.Errorf("connect to SMTP server %s: %w", u.addr, err))
	}
	deadline := time.Now().Add(2 * a.opts.Timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	var c *smtp.Client
	switch {
	case u.implicitTLS:
		tc := tls.Client(conn, a.tlsConfig(u.host))
		if err := tc.HandshakeContext(ctx); err != nil {
			stop()
			_ = conn.Close()
			return nil, channels.Temporary(fmt.Errorf("TLS with SMTP server %s: %w", u.addr, err))
		}
		c = smtp.NewClient(tc)
	case u.loopback:
		c = smtp.NewClient(conn)
	default:
		c, err = smtp.NewClientStartTLS(conn, a.tlsConfig(u.host))
		if err != nil {
			stop()
			_ = conn.Close()
			return nil, classifySMTP("STARTTLS (required except on loopback) with "+u.addr, err, false)
		}
	}
	_, domain, _ := strings.Cut(a.opts.Address, "@")
	if err := c.Hello(domain); err != nil {
		stop()
		_ = c.Close()
		return nil, classifySMTP("EHLO", err, false)
	}
	if ok, _ := c.Extension("AUTH"); ok || !u.loopback {
		if err := c.Auth(sasl.NewPlainClient("", a.opts.SMTPUsername, a.opts.SMTPPassword)); err != nil {
			stop()
			_ = c.Close()
			return nil, classifySMTP("AUTH as "+a.opts.SMTPUsername, err, false)
		}
	}
	return c, nil
}

// classifySMTP wraps a submission failure in its channels kind; sent says
// whether the mail's data may already be with the server.
func classifySMTP(step string, err error, sent bool) error {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		e := fmt.Errorf("email: SMTP %s: %d %s", step, se.Code, oneLine(se.Message))
		if se.Code >= 500 {
			return channels.Permanent(e)
		}
		return channels.Temporary(e)
	}
	e := fmt.Errorf("email: SMTP %s: %w", step, err)
	if sent {
		return channels.Ambiguous(e)
	}
	return channels.Temporary(e)
}
