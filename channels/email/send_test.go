package email

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakesmtp"
)

func sendMD(t *testing.T, a *Adapter, target channels.Target, md, replyTo, nonce string) (string, error) {
	t.Helper()
	c := a.Format(md)
	if len(c) != 1 {
		t.Fatalf("Format: %d chunks", len(c))
	}
	return a.Send(context.Background(), channels.Outgoing{Target: target, Text: c[0].Text, Plain: c[0].Plain, ReplyTo: replyTo, Nonce: nonce})
}

// TestReplyInThread: an answer to a mail is a reply in its thread — Re:
// subject, In-Reply-To, References from the root — with a text part and an
// HTML part in which the model's and the user's HTML is escaped; the
// user's reply to it stays in the same session.
func TestReplyInThread(t *testing.T) {
	w := newWorld(t)
	sk := newSink()
	a := running(t, w.options(), sk)
	id := w.deliver(t, mailSpec{subject: "=?utf-8?q?Caf=C3=A9_plans?=", text: "where do we meet?"})
	m := sk.waitText(t, "where do we meet?")[0]

	const answer = "At **noon**.\n\n<script>alert(1)</script> <b>not bold</b>\n\n.\n\nBye."
	mid, err := sendMD(t, a, m.Target(), answer, m.MessageID, "turn-1/0")
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	msgs := w.smtp.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d mails sent", len(msgs))
	}
	got := msgs[0]
	h := got.Header
	checks := []struct {
		bad  bool
		what string
	}{
		{got.From != botAddr || len(got.To) != 1 || got.To[0] != "ada@example.org", "envelope " + got.From + " → " + strings.Join(got.To, ",")},
		{got.AuthUser != botAddr, "authenticated as " + got.AuthUser},
		{decodeWords(h.Get("Subject")) != "Re: Café plans", "Subject " + h.Get("Subject")},
		{h.Get("In-Reply-To") != "<"+id+">", "In-Reply-To " + h.Get("In-Reply-To")},
		{h.Get("References") != "<"+id+">", "References " + h.Get("References")},
		{h.Get("Message-Id") != "<"+mid+">", "Message-ID " + h.Get("Message-Id") + ", Send returned " + mid},
		{h.Get("Auto-Submitted") != "auto-replied", "Auto-Submitted " + h.Get("Auto-Submitted")},
		{!strings.Contains(got.Text, "At noon.") || !strings.Contains(got.Text, "<script>alert(1)</script>"), "text part " + got.Text},
		{!strings.Contains(got.Text, "\n.\n"), "a line of a single dot was lost: " + got.Text},
		{!strings.Contains(got.HTML, "<b>noon</b>"), "HTML part has no bold: " + got.HTML},
		{strings.Contains(got.HTML, "<script>") || strings.Contains(got.HTML, "<b>not bold</b>"), "HTML part passes raw HTML through: " + got.HTML},
		{!strings.Contains(got.HTML, "&lt;script&gt;"), "HTML part lost the escaped text: " + got.HTML},
	}
	for _, c := range checks {
		if c.bad {
			t.Error(c.what)
		}
	}

	// Ada answers the bot's mail: same session.
	w.deliver(t, mailSpec{subject: "Re: Café plans", text: "great, see you\n\nOn Fri, Bot wrote:\n> At noon.\n> Bye.", refs: []string{id, mid}})
	got2 := sk.waitText(t, "great, see you")
	if r := got2[len(got2)-1]; r.Target() != m.Target() || r.ReplyTo != mid {
		t.Errorf("the reply to the bot is in %s (reply to %q), want the session %s (reply to %q)", r.Target(), r.ReplyTo, m.Target(), mid)
	}
}

// TestDeliveryStartsThread: a job's delivery to a bare address starts a
// thread (its first line as subject); the answer to it is a session of
// that thread.
func TestDeliveryStartsThread(t *testing.T) {
	w := newWorld(t)
	sk := newSink()
	a := running(t, w.options(), sk)
	mid, err := sendMD(t, a, channels.Target{Channel: Name, ChatID: "ops@example.org"}, "# Daily report\n\nAll green.", "", "job-1")
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	h := w.smtp.Messages()[0].Header
	if h.Get("Subject") != "Daily report" || h.Get("In-Reply-To") != "" || h.Get("Auto-Submitted") != "auto-generated" {
		t.Errorf("delivery header: Subject %q, In-Reply-To %q, Auto-Submitted %q", h.Get("Subject"), h.Get("In-Reply-To"), h.Get("Auto-Submitted"))
	}
	w.deliver(t, mailSpec{from: "Ops <ops@example.org>", subject: "Re: Daily report", text: "thanks", refs: []string{mid}})
	m := sk.waitText(t, "thanks")[0]
	if m.Target().String() != "email:ops@example.org:"+mid {
		t.Errorf("the answer to a delivery is in session %s, want email:ops@example.org:%s", m.Target(), mid)
	}
	if _, err := sendMD(t, a, m.Target(), "You're welcome.", m.MessageID, "turn-2/0"); err != nil {
		t.Fatal(err)
	}
	h = w.smtp.Messages()[1].Header
	if h.Get("Subject") != "Re: Daily report" || !strings.HasPrefix(h.Get("References"), "<"+mid+">") {
		t.Errorf("reply in the delivery's thread: Subject %q, References %q", h.Get("Subject"), h.Get("References"))
	}
}

// TestSendErrorKinds: SMTP refusals are classified for the shared retry
// path, a bad address never reaches the server, and a resend of a chunk
// whose answer was lost carries the same Message-ID.
func TestSendErrorKinds(t *testing.T) {
	w := newWorld(t)
	a, err := New(w.options())
	if err != nil {
		t.Fatal(err)
	}
	to := channels.Target{Channel: Name, ChatID: "ada@example.org"}
	tests := []struct {
		name   string
		setup  func()
		target channels.Target
		want   channels.SendErrorKind
	}{
		{"4xx busy", func() { w.smtp.FailNext(1, 451, smtp.EnhancedCode{4, 7, 1}, "try again later") }, to, channels.KindTemporary},
		{"5xx refused", func() { w.smtp.FailNext(1, 554, smtp.EnhancedCode{5, 7, 1}, "rejected") }, to, channels.KindPermanent},
		{"answer lost after the data", func() { w.smtp.DropAfterNext(1) }, to, channels.KindAmbiguous},
		{"header injection in the address", func() {}, channels.Target{Channel: Name, ChatID: "ada@example.org\r\nBcc: eve@example.net"}, channels.KindPermanent},
		{"a name, not an address", func() {}, channels.Target{Channel: Name, ChatID: "Ada <ada@example.org>"}, channels.KindPermanent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(w.smtp.Messages())
			tc.setup()
			_, err := sendMD(t, a, tc.target, "hello", "", "n-"+tc.name)
			if kind, _ := channels.ClassifyError(err); err == nil || kind != tc.want {
				t.Fatalf("Send = %v (%s), want %s", err, kind, tc.want)
			}
			if strings.Contains(err.Error(), smtpPass) {
				t.Errorf("the error shows the password: %v", err)
			}
			if tc.want == channels.KindAmbiguous {
				first := w.smtp.Messages()[before]
				if _, err := sendMD(t, a, tc.target, "hello", "", "n-"+tc.name); err != nil {
					t.Fatal(err)
				}
				again := w.smtp.Messages()[before+1]
				if first.Header.Get("Message-Id") != again.Header.Get("Message-Id") {
					t.Errorf("the resend has Message-ID %s, the first attempt %s", again.Header.Get("Message-Id"), first.Header.Get("Message-Id"))
				}
			} else if n := len(w.smtp.Messages()); n != before {
				t.Errorf("%d mails accepted", n-before)
			}
		})
	}
}

// TestSMTPAuthRejected: wrong submission credentials are a permanent
// failure that names the account, never the password.
func TestSMTPAuthRejected(t *testing.T) {
	srv := fakesmtp.Start(t, fakesmtp.Options{Username: botAddr, Password: "right"})
	w := newWorld(t)
	o := w.options()
	o.SMTPURL = srv.URL()
	o.SMTPPassword = "wrong-pass-456"
	o.Timeout = 10 * time.Second
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sendMD(t, a, channels.Target{Channel: Name, ChatID: "ada@example.org"}, "hi", "", "x")
	if kind, _ := channels.ClassifyError(err); kind != channels.KindPermanent || strings.Contains(err.Error(), o.SMTPPassword) ||
		!strings.Contains(err.Error(), "AUTH as "+botAddr) {
		t.Errorf("Send = %v (%s), want a permanent AUTH failure without the password", err, kind)
	}
}

// TestMessageIDUnique: turn ids restart with a fresh data directory and
// are alike across bots, so the Message-ID of a chunk is unique per
// installation (a salt kept in its store), while a resend from the same
// store — a restart, another replica — repeats it. Mail stores drop a mail
// whose Message-ID they already have: a reused one would lose the answer.
func TestMessageIDUnique(t *testing.T) {
	w := newWorld(t)
	to := channels.Target{Channel: Name, ChatID: "ada@example.org"}
	shared := &memKV{m: map[string][]byte{}}
	idOf := func(kv *memKV) string {
		o := w.options()
		o.KV = kv
		a, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		id, err := sendMD(t, a, to, "hello", "", "in-1/0")
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	first, again := idOf(shared), idOf(shared)
	fresh := idOf(&memKV{m: map[string][]byte{}})
	if first != again {
		t.Errorf("a resend from the same store has Message-ID %s, the first send %s", again, first)
	}
	if fresh == first {
		t.Errorf("a fresh installation reused Message-ID %s for another mail: mail stores that drop duplicates lose it", fresh)
	}
}

// TestImplicitTLS: smtps:// submits over TLS, verifying the server's
// certificate: an untrusted one fails before any credential is sent.
func TestImplicitTLS(t *testing.T) {
	srv := fakesmtp.Start(t, fakesmtp.Options{Username: botAddr, Password: smtpPass, ImplicitTLS: true})
	w := newWorld(t)
	to := channels.Target{Channel: Name, ChatID: "ada@example.org"}
	o := w.options()
	o.SMTPURL = srv.URL()
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sendMD(t, a, to, "hi", "", "tls-1"); err == nil || !strings.Contains(err.Error(), "TLS with SMTP server") || srv.Auths() != 0 {
		t.Errorf("Send to an untrusted certificate = %v (%d AUTH), want a TLS failure before AUTH", err, srv.Auths())
	}
	o.TLSConfig = &tls.Config{RootCAs: srv.CertPool()}
	if a, err = New(o); err != nil {
		t.Fatal(err)
	}
	if _, err := sendMD(t, a, to, "over TLS", "", "tls-2"); err != nil {
		t.Fatalf("Send over TLS: %v", err)
	}
	if m := srv.Messages(); len(m) != 1 || !strings.Contains(m[0].Text, "over TLS") {
		t.Errorf("the TLS server got %d mails", len(m))
	}
}
