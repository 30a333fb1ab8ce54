package email

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/dovecottest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakesmtp"
)

// TestBacklogNotAnswered: mail already in the mailbox at the first start is
// not answered; mail after it is, and a restart (a new adapter on the same
// store) neither loses nor doubles what came while it was down.
func TestBacklogNotAnswered(t *testing.T) {
	w := newWorld(t)
	w.deliver(t, mailSpec{text: "old mail from last year"})
	kv := &memKV{m: map[string][]byte{}}
	o := w.options()
	o.KV = kv
	sk := newSink()
	_, stop := start(t, o, sk)
	w.deliver(t, mailSpec{text: "first new mail"})
	sk.waitText(t, "first new mail")
	stop()
	w.deliver(t, mailSpec{text: "while down"})
	running(t, o, sk) // a new process on the same store
	w.deliver(t, mailSpec{text: "after restart"})
	got := sk.waitText(t, "after restart")
	var texts []string
	for _, m := range got {
		texts = append(texts, m.Text)
	}
	if want := []string{"first new mail", "while down", "after restart"}; strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("handed on %q, want %q", texts, want)
	}
}

// TestCursorAdvancesAfterAccept: a mail the handler could not persist is
// read again (same message id) after the adapter reconnects, and the ones
// after it follow in order.
func TestCursorAdvancesAfterAccept(t *testing.T) {
	w := newWorld(t)
	sk := newSink()
	sk.fail = 2
	running(t, w.options(), sk)
	w.deliver(t, mailSpec{text: "one"})
	w.deliver(t, mailSpec{text: "two"})
	got := sk.waitText(t, "two")
	if len(got) != 2 || got[0].Text != "one" {
		t.Errorf("handed on %+v, want one then two", got)
	}
}

// TestFlood: a burst of mail is handed on completely, once each, in order.
func TestFlood(t *testing.T) {
	w := newWorld(t)
	sk := newSink()
	running(t, w.options(), sk)
	const n = 60
	for i := range n {
		w.deliver(t, mailSpec{text: fmt.Sprintf("flood %02d", i)})
	}
	got := sk.waitText(t, fmt.Sprintf("flood %02d", n-1))
	if len(got) != n {
		t.Fatalf("handed on %d mails, want %d", len(got), n)
	}
	for i, m := range got {
		if m.Text != fmt.Sprintf("flood %02d", i) {
			t.Errorf("mail %d is %q", i, m.Text)
		}
	}
}

// TestLoginRejected: a wrong password ends Run with an error naming the
// account, never the password.
func TestLoginRejected(t *testing.T) {
	w := newWorld(t)
	o := w.options()
	o.IMAPPassword = "wrong-password-123"
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = a.Run(ctx, channels.SinkFunc(func(context.Context, channels.Message) error { return nil }))
	if err == nil || !strings.Contains(err.Error(), "IMAP login as bot rejected") || strings.Contains(err.Error(), o.IMAPPassword) {
		t.Errorf("Run = %v, want the rejected login, without the password", err)
	}
}

// TestServerURLs: the URL forms and which connections may stay plain text.
func TestServerURLs(t *testing.T) {
	tests := []struct {
		raw                string
		addr               string
		implicit, loopback bool
		bad                bool
	}{
		{raw: "imaps://mail.example.com", addr: "mail.example.com:993", implicit: true},
		{raw: "imap://mail.example.com", addr: "mail.example.com:143"},
		{raw: "imap://127.0.0.1:1143", addr: "127.0.0.1:1143", loopback: true},
		{raw: "imap://[::1]:1143", addr: "[::1]:1143", loopback: true},
		{raw: "imap://localhost", addr: "localhost:143", loopback: true},
		{raw: "imap://user:pw@mail.example.com", bad: true},
		{raw: "https://mail.example.com", bad: true},
		{raw: "imap://mail.example.com/INBOX", bad: true},
		{raw: "mail.example.com:993", bad: true},
	}
	for _, tc := range tests {
		u, err := parseServerURL(tc.raw, "imaps", "imap")
		if tc.bad {
			if err == nil {
				t.Errorf("%q accepted", tc.raw)
			} else if strings.Contains(err.Error(), "pw@") {
				t.Errorf("%q: the error shows the password: %v", tc.raw, err)
			}
			continue
		}
		if err != nil || u.addr != tc.addr || u.implicitTLS != tc.implicit || u.loopback != tc.loopback {
			t.Errorf("%q = %+v, %v", tc.raw, u, err)
		}
	}
}

// TestUIDValidityChange: the mailbox is recreated (new UIDVALIDITY, old
// UIDs meaningless) while the adapter is down, and mail arrives in it
// before the restart: that mail is answered — the cursor falls back to the
// time of the last mail read — and nothing before it is handed on again
// under another id.
func TestUIDValidityChange(t *testing.T) {
	w := newWorld(t)
	admin := w.imap.Client(t, botUser)
	if err := admin.Create("Bot", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	o := w.options()
	o.Mailbox = "Bot"
	o.KV = &memKV{m: map[string][]byte{}}
	deliver := func(text string) {
		raw, _ := w.raw(mailSpec{text: text})
		w.imap.Append(t, botUser, "Bot", raw)
	}
	sk := newSink()
	_, stop := start(t, o, sk)
	deliver("before the mailbox was recreated")
	sk.waitText(t, "before the mailbox was recreated")
	stop()
	if err := admin.Delete("Bot").Wait(); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create("Bot", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	deliver("into the new mailbox while down")
	running(t, o, sk)
	deliver("after the restart")
	got := sk.waitText(t, "after the restart")
	var texts []string
	for _, m := range got {
		texts = append(texts, m.Text)
	}
	if want := "before the mailbox was recreated|into the new mailbox while down|after the restart"; strings.Join(texts, "|") != want {
		t.Errorf("handed on %q, want %q", texts, want)
	}
}

// TestImplicitTLSBoth: imaps:// and smtps:// end to end — a mail read over
// TLS and answered over TLS, certificates verified.
func TestImplicitTLSBoth(t *testing.T) {
	imapSrv := dovecottest.StartWith(t, dovecottest.Options{ImplicitTLS: true}, dovecottest.User{Name: botUser, Password: botPass})
	smtpSrv := fakesmtp.Start(t, fakesmtp.Options{Username: botAddr, Password: smtpPass, ImplicitTLS: true})
	w := &world{imap: imapSrv, smtp: smtpSrv}
	o := w.options()
	pool := x509.NewCertPool()
	pool.AddCert(imapSrv.Certificate())
	pool.AddCert(smtpSrv.Certificate())
	o.TLSConfig = &tls.Config{RootCAs: pool}
	sk := newSink()
	a := running(t, o, sk)
	w.deliver(t, mailSpec{text: "over TLS"})
	m := sk.waitText(t, "over TLS")[0]
	if _, err := sendMD(t, a, m.Target(), "answered over TLS", m.MessageID, "tls/0"); err != nil {
		t.Fatal(err)
	}
	if got := smtpSrv.Messages(); len(got) != 1 || !strings.Contains(got[0].Text, "answered over TLS") {
		t.Errorf("sent %d mails", len(got))
	}
}

// TestPollingWithoutIdle: on a server without IDLE new mail is found by
// polling, and a dropped connection is noticed at the next poll.
func TestPollingWithoutIdle(t *testing.T) {
	w := newWorld(t)
	o := w.options()
	o.noIdle, o.PollInterval = true, 50*time.Millisecond
	sk := newSink()
	running(t, o, sk)
	w.deliver(t, mailSpec{text: "found by polling"})
	sk.waitText(t, "found by polling")
	w.imap.DropConnections()
	w.deliver(t, mailSpec{text: "after the drop"})
	if got := sk.waitText(t, "after the drop"); len(got) != 2 {
		t.Errorf("handed on %d mails, want 2", len(got))
	}
}
