package main

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit"
	"github.com/switchboard-bot/switchboard/internal/testkit/dovecottest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakesmtp"
)

// startEmailDaemon is startDaemonBin that also waits, when logLine is
// set, for that line in the daemon's log.
func startEmailDaemon(t *testing.T, env []string, cfg, addr, logLine string) *daemonProc {
	t.Helper()
	p := startDaemonBin(t, env, cfg, addr)
	if logLine != "" {
		awaitCond(t, "the daemon to log "+logLine, func() bool { return strings.Contains(p.stderr.String(), logLine) }, p.dump)
	}
	return p
}

// Issue 33: the built binary answers email — an authenticated sender's
// mail once, in its thread; a stranger with a pairing code only; a forged
// sender and an auto-reply not at all; the mail already in the mailbox at the first start not at
// all — accepts email targets in deliver_to and personas.by_target, checks
// both servers' credentials in doctor, and a kill in the middle of a turn
// loses and doubles nothing: the turn is replayed, the mail that arrived
// while it was down is answered, each once.
func TestBinaryEmail(t *testing.T) {
	const (
		bot      = "bot@example.com"
		ada      = "ada@example.org"
		eve      = "eve@example.net"
		password = "mail-secret-e2e-42"
		servID   = "mx.example.com"
	)
	imap := dovecottest.Start(t, dovecottest.User{Name: "bot", Password: password})
	smtp := fakesmtp.Start(t, fakesmtp.Options{Username: bot, Password: password})
	var stalled atomic.Bool
	llm := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
		text := r.LastUserText()
		if strings.Contains(text, "slow question") && stalled.CompareAndSwap(false, true) {
			return fakellm.Response{Content: "a long answer that never ends", StallAfter: 1}
		}
		return fakellm.Response{Content: "echo: " + text}
	})
	var seq atomic.Int64
	deliver := func(from, text string, extra ...string) string {
		t.Helper()
		id := fmt.Sprintf("e2e%d@%s", seq.Add(1), strings.SplitN(from, "@", 2)[1])
		_, dom, _ := strings.Cut(from, "@")
		hdr := fmt.Sprintf("Authentication-Results: %s; dkim=pass header.d=%s; dmarc=pass header.from=%s\r\n", servID, dom, dom)
		for _, e := range extra {
			if e == "forged" {
				hdr = ""
				continue
			}
			hdr += e + "\r\n"
		}
		raw := fmt.Sprintf("%sFrom: <%s>\r\nTo: <%s>\r\nSubject: e2e\r\nMessage-ID: <%s>\r\nDate: %s\r\n\r\n%s\r\n",
			hdr, from, bot, id, time.Now().Format(time.RFC1123Z), text)
		imap.Append(t, "bot", "INBOX", []byte(raw))
		return id
	}
	deliver(ada, "old mail in the backlog")

	addr := freePort(t)
	cfg := writeConfig(t, fmt.Sprintf(`bot:
  data_dir: ./data
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
access:
  mode: pairing
  allow_from: ["email:user:%s"]
personas:
  dir: ./personas
  by_target: {"email:%s": assistant}
channels:
  console:
    enabled: false
  email:
    enabled: true
    address: %s
    imap: {url: "%s", username: bot}
    smtp: {url: "%s"}
    authserv_id: %s
jobs:
  - name: email-note
    schedule: "0 9 * * *"
    kind: reminder
    text: Stand-up soon
    deliver_to: ["email:ops@example.org"]
server:
  listen: %s
`, llm.URL, ada, ada, bot, imap.URL(), smtp.URL(), servID, addr))
	env := cleanEnv("SB_E2E_KEY="+e2eKey, "EMAIL_PASSWORD="+password)

	doc := runBin(t, env, "--config", cfg, "doctor")
	out := doc.stdout + doc.stderr
	if !strings.Contains(out, "IMAP at "+imap.URL()+": logged in as bot") || !strings.Contains(out, "SMTP at "+smtp.URL()+": authenticated as "+bot) {
		t.Errorf("doctor does not check the email credentials:\n%s", out)
	}
	noSecret(t, doc, password)

	d := startEmailDaemon(t, env, cfg, addr, "first start on this mailbox")
	answers := func(text string) int {
		n := 0
		for _, m := range smtp.Messages() {
			if strings.Contains(m.Text, "echo: "+text) {
				n++
			}
		}
		return n
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		testkit.WaitUntil(t, waitHang, 20*time.Millisecond, what, func() (bool, <-chan struct{}) { return cond(), nil })
	}

	first := deliver(ada, "hello bot")
	wait("the answer to hello", func() bool { return answers("hello bot") > 0 })
	// A stranger gets a pairing code by mail, in reply to theirs, never the
	// model; a forged sender and an auto-reply get nothing at all.
	deliver(ada, "forged ada", "forged")
	deliver(ada, "out of office", "Auto-Submitted: auto-replied")
	strangers := deliver(eve, "stranger asks")
	toEve := func() (n int, last fakesmtp.Message) {
		for _, m := range smtp.Messages() {
			if len(m.To) == 1 && m.To[0] == eve {
				n, last = n+1, m
			}
		}
		return n, last
	}
	wait("the stranger's pairing reply", func() bool { n, _ := toEve(); return n > 0 })
	if n, m := toEve(); n != 1 || m.Header.Get("In-Reply-To") != "<"+strangers+">" {
		t.Errorf("the stranger got %d mails (In-Reply-To %q), want one pairing reply to theirs", n, m.Header.Get("In-Reply-To"))
	}

	// A kill in the middle of a turn.
	deliver(ada, "slow question")
	wait("the model to be asked the slow question", func() bool {
		for _, r := range llm.Requests() {
			if strings.Contains(r.LastUserText(), "slow question") {
				return true
			}
		}
		return false
	})
	d.kill()
	deliver(ada, "while down")
	startEmailDaemon(t, env, cfg, addr, "")
	wait("the replayed and the new answer", func() bool { return answers("slow question") > 0 && answers("while down") > 0 })
	deliver(ada, "last one")
	wait("the last answer", func() bool { return answers("last one") > 0 })

	// A reminder job delivers to a bare address: a new thread.
	if r := runBin(t, env, "--config", cfg, "jobs", "run", "email-note"); r.code != 0 {
		t.Fatalf("jobs run: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var note *fakesmtp.Message
	wait("the reminder by mail", func() bool {
		for _, m := range smtp.Messages() {
			if len(m.To) == 1 && m.To[0] == "ops@example.org" {
				note = &m
				return true
			}
		}
		return false
	})
	if !strings.Contains(note.Text, "Stand-up soon") || note.Header.Get("In-Reply-To") != "" || note.Header.Get("Auto-Submitted") != "auto-generated" {
		t.Errorf("the reminder mail: text %q, In-Reply-To %q, Auto-Submitted %q", note.Text, note.Header.Get("In-Reply-To"), note.Header.Get("Auto-Submitted"))
	}

	for _, s := range []string{"hello bot", "slow question", "while down", "last one"} {
		if n := answers(s); n != 1 {
			t.Errorf("%q was answered %d times, want once", s, n)
		}
	}
	for _, s := range []string{"old mail in the backlog", "stranger asks", "forged ada", "out of office"} {
		if n := answers(s); n != 0 {
			t.Errorf("%q was answered %d times, want never", s, n)
		}
		for _, r := range llm.Requests() {
			if strings.Contains(r.LastUserText(), s) {
				t.Errorf("%q reached the model", s)
			}
		}
	}
	for _, m := range smtp.Messages() {
		if len(m.To) != 1 || (m.To[0] != ada && m.To[0] != eve && m.To[0] != "ops@example.org") {
			t.Errorf("a mail went to %v", m.To)
		}
		if strings.Contains(m.Text, "echo: hello bot") && m.Header.Get("In-Reply-To") != "<"+first+">" {
			t.Errorf("the answer to hello is not a reply to it: In-Reply-To %q", m.Header.Get("In-Reply-To"))
		}
	}
	if strings.Contains(d.stderr.String(), password) {
		t.Error("the password appears in the daemon's log")
	}
	t.Logf("%d mails sent", len(smtp.Messages()))
}
