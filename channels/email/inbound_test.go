package email

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit"
)

// sink records what the adapter hands on; fail, while > 0, refuses that
// many messages (not persisted).
type sink struct {
	mu      sync.Mutex
	msgs    []channels.Message
	fail    int
	changed chan struct{}
}

func newSink() *sink { return &sink{changed: make(chan struct{})} }

func (s *sink) Handle(_ context.Context, m channels.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail > 0 {
		s.fail--
		return errors.New("store unavailable")
	}
	s.msgs = append(s.msgs, m)
	close(s.changed)
	s.changed = make(chan struct{})
	return nil
}

func (s *sink) all() []channels.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]channels.Message(nil), s.msgs...)
}

// waitText waits for a message with text and returns the messages so far.
func (s *sink) waitText(t *testing.T, text string) []channels.Message {
	t.Helper()
	var got []channels.Message
	testkit.WaitUntil(t, 20*time.Second, 0, fmt.Sprintf("a message %q", text), func() (bool, <-chan struct{}) {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		got = s.all()
		for _, m := range got {
			if m.Text == text {
				return true, ch
			}
		}
		return false, ch
	})
	return got
}

// running starts an adapter with opts until the test ends.
func running(t *testing.T, opts Options, sk channels.Sink) *Adapter {
	t.Helper()
	a, stop := start(t, opts, sk)
	t.Cleanup(stop)
	return a
}

// start runs an adapter with opts until stop, which checks that Run ended
// with nil; it returns once the adapter is ready.
func start(t *testing.T, opts Options, sk channels.Sink) (*Adapter, func()) {
	t.Helper()
	a, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, sk) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	testkit.WaitUntil(t, 20*time.Second, 5*time.Millisecond, "the adapter ready", func() (bool, <-chan struct{}) { return a.Ready(), nil })
	return a, stop
}

// TestMailNotAnswered: mail that must never reach the handler — forged or
// unauthenticated senders, automatic mail, the bot's own — does not; a
// person's authenticated mail after it does, normalized.
func TestMailNotAnswered(t *testing.T) {
	w := newWorld(t)
	sk := newSink()
	running(t, w.options(), sk)
	const dmarcPass = authServID + "; dmarc=pass header.from=example.org"
	dropped := []struct {
		name string
		m    mailSpec
	}{
		{"no Authentication-Results", mailSpec{authResults: "-"}},
		{"another server's pass", mailSpec{authResults: "evil.example.net; dmarc=pass header.from=example.org"}},
		{"forged pass below the receiving server's fail", mailSpec{headers: []string{
			"Authentication-Results: " + authServID + "; dmarc=fail header.from=example.org"}, authResults: dmarcPass}},
		{"dkim pass of an unaligned domain", mailSpec{authResults: authServID + "; dkim=pass header.d=evil.example.net; dmarc=fail"}},
		{"dmarc pass for another From domain", mailSpec{authResults: authServID + "; dmarc=pass header.from=evil.example.net"}},
		{"auto-reply", mailSpec{headers: []string{"Auto-Submitted: auto-replied"}}},
		{"bulk", mailSpec{headers: []string{"Precedence: bulk"}}},
		{"mailing list", mailSpec{headers: []string{"List-Id: <team.lists.example.org>"}}},
		{"bounce with empty Return-Path", mailSpec{headers: []string{"Return-Path: <>"}}},
		{"MAILER-DAEMON", mailSpec{from: "Mail Delivery System <MAILER-DAEMON@example.org>"}},
		{"the bot's own mail", mailSpec{from: "Bot <" + botAddr + ">"}},
		{"the bot's own mail, address in capitals", mailSpec{from: "<BOT@Example.COM>"}},
		{"two From addresses", mailSpec{from: "ada@example.org, eve@example.org"}},
	}
	for i, d := range dropped {
		d.m.text = fmt.Sprintf("dropped %d: %s", i, d.name)
		w.deliver(t, d.m)
	}
	ok := []mailSpec{
		{text: "aligned dkim", authResults: authServID + "; dkim=pass header.d=example.org; dmarc=none"},
		{text: "dkim of the parent domain", from: "Ada <ada@eu.example.org>", authResults: authServID + "; dkim=pass (good) header.i=@example.org"},
		{text: "the last one", authResults: strings.ToUpper(authServID) + " 1; dmarc = pass (p=reject) header.from=example.org"},
	}
	for _, m := range ok {
		w.deliver(t, m)
	}
	got := sk.waitText(t, "the last one")
	for _, m := range got {
		if strings.HasPrefix(m.Text, "dropped") {
			t.Errorf("handed on although it must not be answered: %q", m.Text)
		}
	}
	if len(got) != len(ok) {
		t.Errorf("handed on %d mails, want %d: %+v", len(got), len(ok), got)
	}
	m := got[0]
	if m.Channel != Name || m.ChatID != "ada@example.org" || m.Sender.ID != "ada@example.org" || m.Sender.Name != "Ada" ||
		!m.Direct || m.Mentioned || m.ThreadID != m.MessageID || m.MessageID == "" {
		t.Errorf("normalized badly: %+v", m)
	}
}

// TestMailBounded: what a sender can make large is bounded before it is
// downloaded — an attachment over the limit, too many attachments, a huge
// text — and the mail is still answered, saying what was left out.
func TestMailBounded(t *testing.T) {
	w := newWorld(t)
	sk := newSink()
	o := w.options()
	o.MaxAttachment = 4 << 10
	o.MaxText = 2 << 10
	running(t, o, sk)

	big := images(1, 64<<10)[0]
	w.deliver(t, mailSpec{text: "a big one", image: big})
	w.deliver(t, mailSpec{text: "many", more: images(maxAttachments+5, 100)})
	long := strings.Repeat("lorem ipsum ", 10000)
	w.deliver(t, mailSpec{text: "start " + long})
	got := sk.waitText(t, "many\n\n"+fmt.Sprintf("[%d more attachments were not read: at most %d are]", 5, maxAttachments))
	if len(got) < 2 {
		t.Fatalf("got %d messages", len(got))
	}
	if m := got[0]; len(m.Media) != 0 || !strings.HasPrefix(m.Text, "a big one\n\n[attachment \"photo.jpg\" (image/jpeg, ") ||
		!strings.HasSuffix(m.Text, "KiB) was not read: larger than the limit of 4.0 KiB]") {
		t.Errorf("an attachment over the limit: %d media, text %q", len(m.Media), m.Text)
	}
	if m := got[1]; len(m.Media) != maxAttachments {
		t.Errorf("a mail with %d attachments arrived with %d, want the first %d", maxAttachments+5, len(m.Media), maxAttachments)
	}
	var m channels.Message
	testkit.WaitUntil(t, 20*time.Second, 10*time.Millisecond, "the long mail", func() (bool, <-chan struct{}) {
		all := sk.all()
		if len(all) < 3 {
			return false, nil
		}
		m = all[2]
		return true, nil
	})
	if len(m.Text) > o.MaxText+200 || !strings.HasSuffix(m.Text, "[the rest of the mail was cut: it is longer than the limit]") {
		t.Errorf("a %d-byte text arrived as %d bytes ending %q", len(long), len(m.Text), m.Text[max(0, len(m.Text)-80):])
	}
}

// TestMailText: what the model reads of a mail.
func TestMailText(t *testing.T) {
	w := newWorld(t)
	sk := newSink()
	a := running(t, w.options(), sk)
	htmlOnly, _ := w.raw(mailSpec{text: "placeholder"})
	htmlOnly = []byte(strings.Replace(string(htmlOnly), "Content-Type: text/plain; charset=utf-8\r\n\r\nplaceholder",
		"Content-Type: text/html; charset=iso-8859-1\r\n\r\n<html><head><style>p{}</style></head><body><p>Gr\xfc\xdfe,</p><p>what's <b>new</b>?</p><script>x()</script></body></html>", 1))
	w.imap.Append(t, botUser, "INBOX", htmlOnly)
	w.deliver(t, mailSpec{subject: "=?utf-8?q?only_a_subject=0D=0ABcc:_eve@example.net?=", text: ""})
	w.deliver(t, mailSpec{headers: []string{"Auto-Submitted: no"}, text: "a person, says Auto-Submitted"})
	got := sk.waitText(t, "a person, says Auto-Submitted")
	if len(got) != 3 {
		t.Fatalf("got %d messages: %+v", len(got), got)
	}
	if got[0].Text != "Grüße,\n\nwhat's new?" {
		t.Errorf("an HTML-only mail reads %q", got[0].Text)
	}
	if got[1].Text != "only a subject Bcc: eve@example.net" {
		t.Errorf("a mail without a body reads %q, want its subject on one line", got[1].Text)
	}
	// The reply to it: the subject stays one header line.
	if _, err := sendMD(t, a, got[1].Target(), "ok", got[1].MessageID, "x/0"); err != nil {
		t.Fatal(err)
	}
	h := w.smtp.Messages()[0].Header
	if len(h["Bcc"]) != 0 || decodeWords(h.Get("Subject")) != "Re: only a subject Bcc: eve@example.net" {
		t.Errorf("the reply's header: Bcc %q, Subject %q", h["Bcc"], decodeWords(h.Get("Subject")))
	}
}

// TestAuthResultsOff: with require_auth_results off the From line is
// trusted as is (a closed setup), automatic mail is still never answered.
func TestAuthResultsOff(t *testing.T) {
	w := newWorld(t)
	o := w.options()
	o.RequireAuthResults, o.AuthServID = false, ""
	sk := newSink()
	running(t, o, sk)
	w.deliver(t, mailSpec{text: "vacation", authResults: "-", headers: []string{"Auto-Submitted: auto-replied"}})
	w.deliver(t, mailSpec{text: "no verdict at all", authResults: "-"})
	if got := sk.waitText(t, "no verdict at all"); len(got) != 1 || got[0].Sender.ID != "ada@example.org" {
		t.Errorf("handed on %+v", got)
	}
}
