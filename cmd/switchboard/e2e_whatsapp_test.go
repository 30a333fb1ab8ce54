package main

// Issue 33 (WhatsApp), with the built binary against fakewhatsapp: Meta's
// webhook verification, a message answered once, a stranger refused before
// the model, a kill -9 in the middle of a turn (and a message sent while the
// daemon is down) losing and doubling nothing, jobs and personas accepting
// whatsapp targets, doctor checking the credentials against the server.

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakewhatsapp"
)

var (
	waAda      = fakewhatsapp.User{WaID: "4915112345678", Name: "Ada"}
	waStranger = fakewhatsapp.User{WaID: "4917699999999", Name: "Mallory"}
)

func whatsappConfig(t *testing.T, llmURL, apiURL, phoneID, addr, extra string) string {
	return writeConfig(t, whatsappYAML(llmURL, apiURL, phoneID, addr, extra))
}

func whatsappYAML(llmURL, apiURL, phoneID, addr, extra string) string {
	return fmt.Sprintf(`bot:
  data_dir: ./data
  timezone: UTC
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
channels:
  console:
    enabled: false
  whatsapp:
    enabled: true
    phone_number_id: "%s"
    api_url: %s
access:
  mode: pairing
  allow_from: ["whatsapp:user:+%s"]
personas:
  dir: ./personas
server:
  listen: %s
%s`, llmURL, phoneID, apiURL, waAda.WaID, addr, extra)
}

func whatsappEnv(fake *fakewhatsapp.Server) []string {
	return cleanEnv("SB_E2E_KEY="+e2eKey, "WHATSAPP_ACCESS_TOKEN="+fake.AccessToken(),
		"WHATSAPP_APP_SECRET="+fake.AppSecret(), "WHATSAPP_VERIFY_TOKEN="+fake.VerifyToken())
}

// texts returns the bot's messages to u.
func texts(fake *fakewhatsapp.Server, u fakewhatsapp.User) []string {
	var out []string
	for _, m := range fake.Sent(u.WaID) {
		out = append(out, m.Text)
	}
	return out
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func TestBinaryWhatsApp(t *testing.T) {
	var stalled atomic.Bool
	llm := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
		text := r.LastUserText()
		if strings.Contains(text, "slow question") && stalled.CompareAndSwap(false, true) {
			return fakellm.Response{Content: "never delivered", Delay: time.Hour} // until the daemon dies
		}
		return fakellm.Response{Content: "echo: " + text}
	})
	fake := fakewhatsapp.New(t, fakewhatsapp.Options{})
	addr := freePort(t)
	cfg := whatsappConfig(t, llm.URL, fake.URL(), fake.PhoneNumberID(), addr, "")
	env := whatsappEnv(fake)
	fake.SetWebhook("http://" + addr + "/webhooks/whatsapp")
	d := startDaemonBin(t, env, cfg, addr)
	const wait = waitHang

	// Meta's subscription check.
	if code, body := fake.Verify("subscribe", fake.VerifyToken(), "1158201444"); code != http.StatusOK || body != "1158201444" {
		t.Fatalf("verification answered %d %q, want the challenge", code, body)
	}
	if code, _ := fake.Verify("subscribe", "a guess", "1158201444"); code != http.StatusForbidden {
		t.Fatalf("verification with a wrong token answered %d, want 403", code)
	}

	// A message answered once.
	fake.UserSays(t, waAda, "hello bot")
	fake.WaitFor(t, wait, "the answer", func() bool { return count(texts(fake, waAda), "echo: hello bot") == 1 })

	// A stranger gets the pairing code, never the model.
	fake.UserSays(t, waStranger, "let me in")
	fake.WaitFor(t, wait, "the stranger's pairing reply", func() bool { return len(texts(fake, waStranger)) == 1 })
	for _, r := range llm.Requests() {
		if strings.Contains(r.LastUserText(), "let me in") {
			t.Fatal("a stranger's message reached the model")
		}
	}

	// kill -9 in the middle of a turn; a message arrives while the daemon is
	// down; after the restart both are answered once.
	slow := fake.UserSays(t, waAda, "slow question")
	fake.WaitFor(t, wait, "the slow turn to reach the model", func() bool {
		return stalled.Load()
	})
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-d.done
	d.done <- nil
	down := fake.Send(waAda, fake.Text(waAda, "sent while down"))
	d = startDaemonBin(t, env, cfg, addr)
	down.Wait(t, wait)
	if !slow.Delivered() {
		t.Fatal("the slow question's delivery was not acknowledged before the kill")
	}
	// Each question is answered in exactly one message (messages that
	// arrive together may share a turn: "echo: a\n\nb"), and no answer
	// is sent twice.
	answeredOnce := func(qs ...string) (bool, string) {
		got := texts(fake, waAda)
		for _, q := range qs {
			n := 0
			for _, a := range got {
				if strings.Contains(a, q) {
					n++
				}
			}
			if n != 1 {
				return false, fmt.Sprintf("%q is answered in %d messages", q, n)
			}
		}
		return true, ""
	}
	dump := func() string { return fmt.Sprintf("the user sees %q\n%s", texts(fake, waAda), d.dump()) }
	awaitCond(t, "the answers after the restart", func() bool {
		ok, _ := answeredOnce("slow question", "sent while down")
		return ok
	}, dump)
	fake.UserSays(t, waAda, "after the restart")
	awaitCond(t, "the answer after the restart", func() bool {
		ok, _ := answeredOnce("after the restart")
		return ok
	}, dump)
	if ok, why := answeredOnce("hello bot", "slow question", "sent while down", "after the restart"); !ok {
		t.Errorf("%s\n%s", why, dump())
	}
	got := texts(fake, waAda)
	for i, a := range got {
		if count(got[i+1:], a) > 0 {
			t.Errorf("the answer %q was sent twice\n%s", a, dump())
		}
	}
	if strings.Contains(d.dump(), fake.AccessToken()) || strings.Contains(d.dump(), fake.AppSecret()) {
		t.Error("a WhatsApp secret appears in the daemon's output")
	}
	d.stop(t)
}

// jobs' deliver_to and personas.by_target accept whatsapp targets; doctor
// checks the credentials against the server and says which one is wrong.
func TestBinaryWhatsAppConfigAndDoctor(t *testing.T) {
	fake := fakewhatsapp.New(t, fakewhatsapp.Options{})
	extra := `jobs:
  - name: standup
    schedule: "0 9 * * 1-5"
    kind: reminder
    text: Stand-up in 5 minutes
    deliver_to: ["whatsapp:+4915112345678"]
`
	body := whatsappYAML("http://127.0.0.1:1/v1", fake.URL(), fake.PhoneNumberID(), "127.0.0.1:8787",
		extra+"heartbeat:\n  targets: [\"whatsapp:+4915112345678\"]\n")
	body = strings.Replace(body, "  dir: ./personas\n", "  dir: ./personas\n  by_target: {\"whatsapp:+4915112345678\": assistant}\n", 1)
	cfg := writeConfig(t, body)
	if r := runBin(t, whatsappEnv(fake), "--config", cfg, "config", "validate"); r.code != 0 {
		t.Fatalf("config validate: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r := runBin(t, whatsappEnv(fake), "--config", cfg, "doctor")
	if !strings.Contains(r.stdout, "app secret matches") {
		t.Fatalf("doctor did not check WhatsApp:\n%s\n%s", r.stdout, r.stderr)
	}
	bad := cleanEnv("SB_E2E_KEY="+e2eKey, "WHATSAPP_ACCESS_TOKEN=EAAwrong-token-123",
		"WHATSAPP_APP_SECRET="+fake.AppSecret(), "WHATSAPP_VERIFY_TOKEN="+fake.VerifyToken())
	r = runBin(t, bad, "--config", cfg, "doctor")
	if r.code == 0 || !strings.Contains(r.stdout, "refused the access token") || strings.Contains(r.stdout+r.stderr, "EAAwrong-token-123") {
		t.Fatalf("doctor with a wrong token: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// Outside the 24-hour window (this user never wrote) a reminder job reaches
// WhatsApp as the configured reminder template, its text as {{1}}, once per
// run; a task's report to the same user is refused and recorded, not retried.
func TestBinaryWhatsAppReminderTemplate(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Text("the report"))
	fake := fakewhatsapp.New(t, fakewhatsapp.Options{})
	addr := freePort(t)
	extra := `jobs:
  - name: water
    schedule: "@every 1s"
    kind: reminder
    text: Drink some water
    deliver_to: ["whatsapp:+4915112345678"]
  - name: report
    schedule: "@every 1s"
    kind: task
    prompt: Write the report
    deliver_to: ["whatsapp:+4915112345678"]
`
	body := whatsappYAML(llm.URL, fake.URL(), fake.PhoneNumberID(), addr, extra)
	body = strings.Replace(body, "    api_url: "+fake.URL()+"\n",
		"    api_url: "+fake.URL()+"\n    templates:\n      reminder: {name: reminder_v1, language: en_US}\n", 1)
	cfg := writeConfig(t, body)
	fake.SetWebhook("http://" + addr + "/webhooks/whatsapp")
	d := startDaemonBin(t, whatsappEnv(fake), cfg, addr)
	fake.WaitFor(t, waitHang, "the reminder template and the refused report", func() bool {
		return len(fake.Sent(waAda.WaID)) >= 1 && fake.Refused() >= 2
	})
	// The fake counts a refusal when it answers; the daemon logs it once
	// the answer is read. Stopping at the count alone interrupted that read
	// now and then ("delivery interrupted by shutdown", no reason logged).
	awaitCond(t, "the refused report's reason in the log", func() bool {
		return strings.Contains(d.dump(), "more than 24 hours old")
	}, d.dump)
	d.stop(t)
	for _, m := range fake.Sent(waAda.WaID) {
		if m.Type != "template" || m.Template != "reminder_v1" || m.Language != "en_US" || m.Text != "Drink some water" {
			t.Errorf("the user got %+v, want only the reminder_v1 template with the reminder's text", m)
		}
	}
	if !strings.Contains(d.dump(), "more than 24 hours old") {
		t.Errorf("the refused report's reason is not in the log:\n%s", d.dump())
	}
}
