package email

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
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
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, sk) }()
	for !a.Ready() {
		time.Sleep(5 * time.Millisecond)
	}
	w.deliver(t, mailSpec{text: "first new mail"})
	sk.waitText(t, "first new mail")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
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
