package email

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/channeltest"
	"github.com/switchboard-bot/switchboard/internal/testkit"
)

// The adapter conformance suite (channels/channeltest), run against a real
// IMAP server (dovecot) and fakesmtp.
func TestConformance(t *testing.T) {
	channeltest.Run(t, conformance{})
}

// conformanceThread is the thread the driver's user writes in.
const conformanceThread = "root-conf@example.org"

type conformance struct{}

func (conformance) Capabilities() channeltest.Capabilities {
	return channeltest.Capabilities{
		MaxChunk:   ChunkLimit,
		CodeBlocks: channeltest.Fenced, // a chunk's Text is the Markdown
		NotApplicable: map[channeltest.Behaviour]string{
			channeltest.Streaming:    "a sent mail cannot be edited: the answer is sent once, at the end",
			channeltest.Typing:       "mail has no typing indicator",
			channeltest.GroupMention: "email is always a direct chat (a mail is answered to its sender alone)",
			channeltest.RateLimit:    "SMTP has no retry-after: a 4xx answer is a temporary error the handler retries with backoff (TestSendErrorKinds)",
		},
	}
}

func (conformance) New(t *testing.T) (channels.Channel, channeltest.Driver) {
	w := newWorld(t)
	a, err := New(w.options())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a, driver{w: w}
}

// driver plays Ada, who writes to the bot in one thread.
type driver struct{ w *world }

func (d driver) DirectTarget() channels.Target {
	return channels.Target{Channel: Name, ChatID: "ada@example.org", ThreadID: conformanceThread}
}

// UserSays returns the raw mail, which Redeliver files again.
func (d driver) UserSays(t testing.TB, tg channels.Target, text string) channeltest.Event {
	raw, _ := d.w.raw(mailSpec{text: text, refs: refsOf(tg)})
	d.w.imap.Append(t, botUser, "INBOX", raw)
	return raw
}

func refsOf(tg channels.Target) []string {
	if tg.ThreadID == "" {
		return nil
	}
	return []string{tg.ThreadID}
}

// Redeliver files the same mail again (a delivery agent retrying).
func (d driver) Redeliver(t testing.TB, ev channeltest.Event) {
	raw, ok := ev.([]byte)
	if !ok {
		t.Fatalf("not a raw mail: %T", ev)
	}
	d.w.imap.Append(t, botUser, "INBOX", raw)
}

// BotSays files a mail from the bot's own address (a copy of its answer).
func (d driver) BotSays(t testing.TB, tg channels.Target, text string) {
	d.w.deliver(t, mailSpec{from: "Bot <" + botAddr + ">", text: text, refs: refsOf(tg), authResults: "-"})
}

func (d driver) UserSendsImage(t testing.TB, tg channels.Target, caption string, data []byte) channeltest.Event {
	raw, _ := d.w.raw(mailSpec{text: caption, refs: refsOf(tg), image: data})
	d.w.imap.Append(t, botUser, "INBOX", raw)
	return raw
}

func (d driver) DropConnection(testing.TB) { d.w.imap.DropConnections() }

// Sent returns the text of the bot's mails to the target's address in its
// thread (References naming the thread's root).
func (d driver) Sent(tg channels.Target) []string {
	var out []string
	for _, m := range d.w.smtp.Messages() {
		if !slices.Contains(m.To, tg.ChatID) {
			continue
		}
		refs := ids(m.Header.Get("References"))
		if (tg.ThreadID == "") != (len(refs) == 0) || (tg.ThreadID != "" && refs[0] != tg.ThreadID) {
			continue
		}
		out = append(out, strings.TrimSpace(m.Text))
	}
	return out
}

func (d driver) WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testkit.WaitUntil(t, channeltest.Timeout, 20*time.Millisecond, what, func() (bool, <-chan struct{}) { return cond(), nil })
}

// Files implements channeltest.FileDriver: the attachments of the bot's
// mails in the target's thread, each with its mail's text as the caption.
func (d driver) Files(tg channels.Target) []channeltest.SentFile {
	var out []channeltest.SentFile
	for _, m := range d.w.smtp.Messages() {
		refs := ids(m.Header.Get("References"))
		if !slices.Contains(m.To, tg.ChatID) || (tg.ThreadID == "") != (len(refs) == 0) || (tg.ThreadID != "" && refs[0] != tg.ThreadID) {
			continue
		}
		rm, err := parseMail(m.Data)
		if err != nil {
			out = append(out, channeltest.SentFile{Name: "unreadable mail: " + err.Error()})
			continue
		}
		for _, f := range rm.files {
			out = append(out, channeltest.SentFile{Name: f.name, Data: f.data, Caption: strings.TrimSpace(rm.text)})
		}
	}
	return out
}
