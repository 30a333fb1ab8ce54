package email

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"golang.org/x/net/html"
	"golang.org/x/text/encoding/htmlindex"

	"github.com/switchboard-bot/switchboard/channels"
)

// This file turns one fetched mail into a channels.Message: the header
// checks (filter.go), threading, the text and the attachments.

// maxHeader bounds the header fields read of one mail.
const maxHeader = 256 << 10

// headerFields are the header fields the adapter reads.
var headerFields = []string{"From", "Subject", "Date", "Message-Id", "In-Reply-To", "References",
	"Auto-Submitted", "Precedence", "List-Id", "Return-Path", "Authentication-Results", "Content-Type",
	"X-Autoreply", "X-Autorespond"}

// maxAttachments bounds the attachments read of one mail.
const maxAttachments = 10

// maxRefs bounds the references kept per thread.
const maxRefs = 10

// thread is what Send needs of a thread: its subject and references.
type thread struct {
	Subject string   `json:"subject"`
	Refs    []string `json:"refs"` // root first, then the latest ids
}

func threadKey(chat, threadID string) string { return "email/thread/" + chat + "/" + threadID }

// inbound reads mail m; ok is false for mail that is not answered (logged
// here). err is an IMAP failure: the mail is read again after a reconnect.
func (a *Adapter) inbound(ctx context.Context, c *imapclient.Client, validity uint32, m *imapclient.FetchMessageBuffer) (channels.Message, bool, error) {
	hsec := &imap.FetchItemBodySection{Specifier: imap.PartSpecifierHeader, HeaderFields: headerFields, Peek: true, Partial: &imap.SectionPartial{Size: maxHeader}}
	got, err := c.Fetch(imap.UIDSetNum(m.UID), &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{hsec}}).Collect()
	if err != nil {
		return channels.Message{}, false, fmt.Errorf("fetch the header of mail uid %d: %w", m.UID, err)
	}
	if len(got) == 0 {
		return channels.Message{}, false, nil // expunged meanwhile
	}
	raw := got[0].FindBodySection(hsec)
	log := a.log.With("uid", m.UID)
	if len(raw) >= maxHeader {
		log.Warn("email: not answered: the mail's header is larger than the limit", "limit", maxHeader)
		return channels.Message{}, false, nil
	}
	h, err := parseHeader(raw)
	if err != nil {
		log.Warn("email: not answered: unreadable header", "err", err)
		return channels.Message{}, false, nil
	}
	fromList, err := h.AddressList("From")
	if err != nil || len(fromList) != 1 {
		log.Warn("email: not answered: the mail has no single From address")
		return channels.Message{}, false, nil
	}
	from := strings.ToLower(fromList[0].Address)
	if from == a.opts.Address {
		log.Debug("email: the bot's own mail ignored")
		return channels.Message{}, false, nil
	}
	if why := automatic(h, from); why != "" {
		log.Info("email: not answered: automatic mail", "why", why, "from", from)
		return channels.Message{}, false, nil
	}
	if a.opts.RequireAuthResults {
		if ok, why := authenticated(h, a.opts.AuthServID, from); !ok {
			log.Warn("email: not answered: the sender is not authenticated", "from", from, "why", why)
			return channels.Message{}, false, nil
		}
	}

	msgID := firstID(h.Get("Message-Id"))
	if msgID == "" {
		msgID = fmt.Sprintf("uid-%d-%d", validity, m.UID)
	}
	inReplyTo := firstID(h.Get("In-Reply-To"))
	refs := ids(h.Get("References"))
	root := msgID
	switch {
	case len(refs) > 0:
		root = refs[0]
	case inReplyTo != "":
		root = inReplyTo
	}
	msg := channels.Message{
		Channel:   Name,
		ChatID:    from,
		ThreadID:  threadID(root),
		MessageID: msgID,
		Sender:    channels.Sender{ID: from, Name: fromList[0].Name},
		Direct:    true,
		ReplyTo:   inReplyTo,
		Time:      m.InternalDate,
	}
	if t, err := mail.ParseDate(h.Get("Date")); err == nil && t.Before(a.opts.Now().Add(24*time.Hour)) {
		msg.Time = t
	}
	if msg.Time.IsZero() {
		msg.Time = a.opts.Now()
	}
	subject := decodeWords(h.Get("Subject"))

	text, media, notes, err := a.body(c, m)
	if err != nil {
		return channels.Message{}, false, err
	}
	text = stripQuoted(text)
	if strings.TrimSpace(text) == "" && len(media) == 0 {
		text = strings.TrimSpace(stripRe(subject))
	}
	if len(notes) > 0 {
		text = strings.TrimSpace(text + "\n\n" + strings.Join(notes, "\n"))
	}
	msg.Text = text
	msg.Media = media

	// What Send needs to answer in the thread, before the handler sees
	// the mail (the answer may go out before Handle returns).
	th := thread{Subject: subject}
	if old, ok, err := a.loadThread(ctx, msg.ChatID, msg.ThreadID); err == nil && ok && old.Subject != "" {
		th.Subject = old.Subject
	}
	th.Refs = appendRefs(append(refs, msgID), maxRefs)
	if err := a.saveThread(ctx, msg.ChatID, msg.ThreadID, th); err != nil {
		return channels.Message{}, false, err
	}
	return msg, true, nil
}

// parseHeader parses header fields (as IMAP returns them, ending with an
// empty line).
func parseHeader(raw []byte) (mail.Header, error) {
	if !bytes.HasSuffix(raw, []byte("\r\n\r\n")) && !bytes.HasSuffix(raw, []byte("\n\n")) {
		raw = append(bytes.TrimRight(raw, "\r\n"), "\r\n\r\n"...)
	}
	mh, err := textproto.NewReader(bufio.NewReader(bytes.NewReader(raw))).ReadMIMEHeader()
	if err != nil && len(mh) == 0 {
		return nil, err
	}
	return mail.Header(mh), nil
}

// ids returns the message ids of a References or In-Reply-To value,
// without brackets.
func ids(v string) []string {
	var out []string
	for {
		i := strings.IndexByte(v, '<')
		if i < 0 {
			break
		}
		j := strings.IndexByte(v[i:], '>')
		if j < 0 {
			break
		}
		if id := strings.TrimSpace(v[i+1 : i+j]); id != "" && len(id) <= 250 && !strings.ContainsAny(id, " \t\r\n\"\x00") {
			out = append(out, id)
		}
		v = v[i+j+1:]
	}
	return out
}

// firstID is the first message id of v ("" when none).
func firstID(v string) string {
	if l := ids(v); len(l) > 0 {
		return l[0]
	}
	return ""
}

// threadID makes a thread's root Message-ID a target's thread part: as is
// when it is a plain token, else a hash of it.
func threadID(root string) string {
	if len(root) <= 200 && utf8.ValidString(root) && !strings.ContainsAny(root, " \t\r\n<>\"") {
		return root
	}
	sum := sha256.Sum256([]byte(root))
	return "h" + hex.EncodeToString(sum[:12])
}

// appendRefs keeps the first reference (the root) and the last n-1.
func appendRefs(refs []string, n int) []string {
	if len(refs) <= n {
		return refs
	}
	return append([]string{refs[0]}, refs[len(refs)-(n-1):]...)
}

func (a *Adapter) loadThread(ctx context.Context, chat, id string) (thread, bool, error) {
	b, ok, err := a.opts.KV.KVGet(ctx, threadKey(chat, id))
	if err != nil || !ok {
		return thread{}, false, err
	}
	var t thread
	if err := json.Unmarshal(b, &t); err != nil {
		return thread{}, false, nil
	}
	return t, true, nil
}

func (a *Adapter) saveThread(ctx context.Context, chat, id string, t thread) error {
	b, _ := json.Marshal(t)
	if err := a.opts.KV.KVPut(ctx, threadKey(chat, id), b); err != nil {
		return fmt.Errorf("save the thread of mail: %w", err)
	}
	return nil
}

// decodeWords decodes RFC 2047 encoded words of a header value.
func decodeWords(v string) string {
	d := mime.WordDecoder{CharsetReader: charsetReader}
	if s, err := d.DecodeHeader(v); err == nil {
		v = s
	}
	return strings.Join(strings.Fields(v), " ")
}

func charsetReader(charset string, r io.Reader) (io.Reader, error) {
	enc, err := htmlindex.Get(charset)
	if err != nil {
		return nil, fmt.Errorf("unknown charset %q", charset)
	}
	return enc.NewDecoder().Reader(r), nil
}

// stripRe removes reply prefixes ("Re: ", "AW: ", "Fwd: ") from a subject.
func stripRe(s string) string {
	for {
		t := strings.TrimSpace(s)
		low := strings.ToLower(t)
		cut := false
		for _, p := range []string{"re:", "aw:", "sv:", "fwd:", "fw:", "wg:"} {
			if strings.HasPrefix(low, p) {
				t, cut = t[len(p):], true
				break
			}
		}
		if !cut {
			return t
		}
		s = t
	}
}

// leaf is a single part of a mail and its IMAP part number.
type leaf struct {
	path []int
	part *imap.BodyStructureSinglePart
}

func leaves(bs imap.BodyStructure, path []int, out *[]leaf) {
	switch b := bs.(type) {
	case *imap.BodyStructureMultiPart:
		for i, ch := range b.Children {
			leaves(ch, append(append([]int(nil), path...), i+1), out)
		}
	case *imap.BodyStructureSinglePart:
		if len(path) == 0 {
			path = []int{1}
		}
		*out = append(*out, leaf{path: path, part: b})
	}
}

func isAttachment(p *imap.BodyStructureSinglePart) bool {
	if d := p.Disposition(); d != nil && strings.EqualFold(d.Value, "attachment") {
		return true
	}
	return !strings.EqualFold(p.Type, "text")
}

// body fetches the text part and the attachments within the bounds; notes
// say what was left out.
func (a *Adapter) body(c *imapclient.Client, m *imapclient.FetchMessageBuffer) (string, []channels.Media, []string, error) {
	var all []leaf
	if m.BodyStructure != nil {
		leaves(m.BodyStructure, nil, &all)
	}
	var textPart *leaf
	for _, want := range []string{"text/plain", "text/html"} {
		for i := range all {
			if l := &all[i]; textPart == nil && l.part.MediaType() == want && !isAttachment(l.part) {
				textPart = l
			}
		}
	}
	var notes []string
	var sections []*imap.FetchItemBodySection
	var textSec *imap.FetchItemBodySection
	if textPart != nil {
		// Encoded bytes for MaxText decoded ones (base64 grows by 4/3).
		textSec = &imap.FetchItemBodySection{Part: textPart.path, Peek: true,
			Partial: &imap.SectionPartial{Size: int64(a.opts.MaxText)*4/3 + 4}}
		sections = append(sections, textSec)
	}
	type att struct {
		l   leaf
		sec *imap.FetchItemBodySection
	}
	var atts []att
	var total int64
	skipped := 0
	for _, l := range all {
		if (textPart != nil && l.part == textPart.part) || !isAttachment(l.part) {
			continue
		}
		if len(atts) == maxAttachments {
			skipped++
			continue
		}
		name := l.part.Filename()
		if name == "" {
			name = l.part.Params["name"]
		}
		size := int64(l.part.Size)
		if strings.EqualFold(l.part.Encoding, "base64") {
			size = size * 3 / 4
		}
		if size > a.opts.MaxAttachment || total+size > a.opts.MaxMedia {
			notes = append(notes, fmt.Sprintf("[attachment %q (%s, %s) was not read: larger than the limit of %s]",
				clip(name, 80), l.part.MediaType(), byteSize(size), byteSize(a.opts.MaxAttachment)))
			continue
		}
		total += size
		s := &imap.FetchItemBodySection{Part: l.path, Peek: true}
		sections = append(sections, s)
		atts = append(atts, att{l: l, sec: s})
	}
	if skipped > 0 {
		notes = append(notes, fmt.Sprintf("[%d more attachments were not read: at most %d are]", skipped, maxAttachments))
	}
	if len(sections) == 0 {
		return "", nil, notes, nil
	}
	got, err := c.Fetch(imap.UIDSetNum(m.UID), &imap.FetchOptions{UID: true, BodySection: sections}).Collect()
	if err != nil {
		return "", nil, nil, fmt.Errorf("fetch the body of mail uid %d: %w", m.UID, err)
	}
	if len(got) == 0 {
		return "", nil, notes, nil
	}
	var text string
	if textPart != nil {
		b := decodePart(got[0].FindBodySection(textSec), textPart.part.Encoding)
		// Cut by the partial fetch (quoted-printable may shrink a lot when
		// decoded) or by the limit.
		if cut := int64(textPart.part.Size) > textSec.Partial.Size; cut || len(b) > a.opts.MaxText {
			b = b[:min(len(b), a.opts.MaxText)]
			notes = append(notes, "[the rest of the mail was cut: it is longer than the limit]")
		}
		text = toUTF8(b, textPart.part.Params["charset"])
		if textPart.part.MediaType() == "text/html" {
			text = htmlText(text)
		}
		text = strings.ToValidUTF8(strings.ReplaceAll(text, "\r\n", "\n"), "\uFFFD")
	}
	var media []channels.Media
	for _, at := range atts {
		data := decodePart(got[0].FindBodySection(at.sec), at.l.part.Encoding)
		name := at.l.part.Filename()
		if name == "" {
			name = at.l.part.Params["name"]
		}
		media = append(media, channels.Media{MIME: at.l.part.MediaType(), Name: name, Data: data})
	}
	return text, media, notes, nil
}

// decodePart undoes a part's Content-Transfer-Encoding; a truncated or
// broken encoding yields what decoded.
func decodePart(b []byte, enc string) []byte {
	var r io.Reader
	switch strings.ToLower(enc) {
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, bytes.NewReader(b))
	case "quoted-printable":
		r = quotedprintable.NewReader(bytes.NewReader(b))
	default:
		return b
	}
	out, _ := io.ReadAll(r)
	return out
}

// toUTF8 decodes b from charset (UTF-8 when empty or unknown).
func toUTF8(b []byte, charset string) string {
	cs := strings.ToLower(charset)
	if cs == "" || cs == "utf-8" || cs == "us-ascii" || cs == "utf8" {
		return string(b)
	}
	r, err := charsetReader(cs, bytes.NewReader(b))
	if err != nil {
		return string(b)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return string(b)
	}
	return string(out)
}

// htmlText is the text of an HTML body: tags dropped, block elements as
// line breaks, scripts and styles left out.
func htmlText(s string) string {
	z := html.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			lines := strings.Split(b.String(), "\n")
			for i, l := range lines {
				lines[i] = strings.TrimSpace(l)
			}
			return strings.TrimSpace(collapseBlank(strings.Join(lines, "\n")))
		case html.TextToken:
			if skip == 0 {
				// Runs of white space are one space; the space at a
				// token's edge separates it from its neighbours.
				b.WriteString(wsRun.ReplaceAllString(string(z.Text()), " "))
			}
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style", "head":
				if z.Token().Type == html.StartTagToken {
					skip++
				} else if skip > 0 {
					skip--
				}
			case "br", "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "table":
				b.WriteString("\n")
			}
		}
	}
}

var wsRun = regexp.MustCompile(`[ \t\r\n\f]+`)

func collapseBlank(s string) string {
	for strings.Contains(s, "\n\n\n") {
		s = strings.ReplaceAll(s, "\n\n\n", "\n\n")
	}
	return s
}

// stripQuoted cuts a signature ("-- " line) and the quoted previous mail at
// the end of a reply (its "> " lines and the "On … wrote:" line before
// them, or an "-----Original Message-----" block).
func stripQuoted(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		t := strings.TrimRight(l, "\r")
		if t == "-- " || strings.HasPrefix(strings.TrimSpace(t), "-----Original Message-----") {
			lines = lines[:i]
			break
		}
	}
	end := len(lines)
	quoted := false
	for end > 0 {
		t := strings.TrimSpace(lines[end-1])
		if t == "" || strings.HasPrefix(t, ">") {
			quoted = quoted || t != ""
			end--
			continue
		}
		break
	}
	if quoted && end > 0 && strings.HasSuffix(strings.TrimSpace(lines[end-1]), ":") {
		end-- // the attribution line ("On Mon, Ada wrote:")
	}
	if !quoted {
		end = len(lines)
	}
	return strings.TrimSpace(strings.Join(lines[:end], "\n"))
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
