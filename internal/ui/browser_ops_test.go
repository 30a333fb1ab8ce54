package ui_test

// Browser tests of the console's operator pages (issue 17): pairing,
// personas, config, jobs and the overview, each through the real daemon and
// the platform fakes.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/browser"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// stranger is a Telegram user nobody approved yet (a private chat's id is
// the user's id).
const stranger = int64(777001)

// pairingCode finds the code in the bot's answer to a stranger ("…
// (switchboard pairing approve CODE)").
var pairingCode = regexp.MustCompile(`pairing approve ([A-Za-z0-9-]{4,})`)

// reloadUntil loads url until the JavaScript condition cond holds, for pages
// that change only when loaded again (a run that finishes in the background).
func reloadUntil(t *testing.T, p *browser.Page, url, what, cond string) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		p.Navigate(url)
		if p.Eval(fmt.Sprintf(`(%s) ? "1" : ""`, cond)) == "1" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s on %s; the page shows %q", waitLong, what, url,
				p.Eval(`document.querySelector("main") ? document.querySelector("main").innerText : ""`))
		}
		<-tick.C
	}
}

// Issue 17: a stranger on Telegram gets a pairing code; the operator
// approves it on the Pairing page; the stranger's next message is answered.
func TestBrowserPairingApprovalLetsTheStrangerIn(t *testing.T) {
	r := startRig(t, rigOptions{Telegram: true})
	r.tg.UserSays(stranger, "hello bot")
	var code string
	eventually(t, "a pairing code for the stranger", func() bool {
		for _, m := range r.tg.Sent(stranger) {
			if c := pairingCode.FindStringSubmatch(m.Plain); c != nil {
				code = c[1]
			}
		}
		return code != ""
	})
	if n := r.llm.RequestCount(); n != 0 {
		t.Fatalf("the model was asked %d times before the stranger was approved", n)
	}

	p := r.browse()
	p.Navigate(r.base + "/ui/pairing")
	row := fmt.Sprintf(`#pairing tr[data-code=%q]`, code)
	p.WaitText(row, "777001")
	p.ClickAndLoad(row + ` form[action="/ui/pairing/approve"] button`)
	if p.Count(row) != 0 {
		t.Errorf("the approved code is still pending on the page")
	}
	p.NoScriptRan()
	r.noSecretShown(p)

	r.tg.UserSays(stranger, "hi again")
	eventually(t, "the stranger answered on Telegram", func() bool {
		for _, m := range r.tg.Sent(stranger) {
			if m.Plain == "echo: hi again" {
				return true
			}
		}
		return false
	})
}

// Issue 17: the operator edits the default persona in the browser; the file
// is written, the personas reload, and the next chat turn runs with the new
// prompt. An invalid edit shows file:line and changes nothing.
func TestBrowserPersonaEditAppliesToTheNextTurn(t *testing.T) {
	const marker = "Always answer like a lighthouse keeper."
	r := startRig(t, rigOptions{})
	p := r.browse()
	openChat(p, r.base)
	say(p, "before")
	p.WaitText("#chat-history .msg.assistant", "echo: before")
	if strings.Contains(r.llm.LastRequest().SystemPrompt(), marker) {
		t.Fatal("the marker is in the prompt before the edit")
	}
	chat := p.Location()

	file := filepath.Join(r.dir, "personas", "assistant.md")
	p.Navigate(r.base + "/ui/personas/edit?name=assistant")
	p.WaitVisible("#persona-text")
	original := p.Value("#persona-text")
	onDisk := func() string {
		b, err := os.ReadFile(file)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return string(b)
	}
	before := onDisk()
	if !strings.HasPrefix(original, "---") {
		t.Fatalf("the editor does not show the persona file: %q", original)
	}
	// An invalid edit: refused with file:line, nothing written.
	p.Fill("#persona-text", "---\nname: assistant\ntemperature: hot\n---\nbody\n")
	p.ClickAndLoad("#persona-save")
	p.WaitVisible("#persona-error")
	if msg := p.Text("#persona-error"); !regexp.MustCompile(`assistant\.md:\d+`).MatchString(msg) {
		t.Errorf("the persona error does not name file:line: %q", msg)
	}
	if onDisk() != before {
		t.Errorf("the refused edit changed %s", file)
	}

	p.Fill("#persona-text", strings.Replace(original, "\n---\n", "\n---\n"+marker+"\n", 1))
	p.ClickAndLoad("#persona-save")
	if p.Count("#persona-error") != 0 {
		t.Fatalf("the valid edit was refused: %s", p.Text("#persona-error"))
	}
	p.NoScriptRan()

	mark := p.ResponseMark()
	p.Navigate(chat)
	p.WaitVisible("#chat-input")
	p.WaitResponse(mark, "/ui/chat/stream")
	say(p, "after")
	p.WaitText("#chat-history .msg.assistant", "echo: after")
	if !strings.Contains(r.llm.LastRequest().SystemPrompt(), marker) {
		t.Fatalf("the next turn did not use the edited persona; system prompt:\n%s", r.llm.LastRequest().SystemPrompt())
	}
	if !strings.Contains(onDisk(), marker) {
		t.Errorf("the edit is not in %s", file)
	}
}

// Issue 17: a config edit with an unknown key — one key, or the whole file
// — is refused with file:line, and the file on disk does not change.
func TestBrowserConfigUnknownKeyIsRefusedAndNothingWritten(t *testing.T) {
	r := startRig(t, rigOptions{})
	before, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	p := r.browse()
	tests := []struct {
		name string
		edit func()
		want *regexp.Regexp // in the error the page shows
	}{
		// A key that does not exist is refused before the file is read,
		// as by `switchboard config set`: no line to point at.
		{"one key", func() {
			p.Fill("#config-key", "llm.modle")
			p.Fill("#config-value", "gpt-4o")
			p.ClickAndLoad(`#config-key-form button[value="preview"]`)
		}, regexp.MustCompile(`llm\.modle: unknown key "modle" in llm \(did you mean "model"\?\)`)},
		{"the file", func() {
			p.Fill("#config-text", string(before)+"\nbogus_section:\n  enabled: true\n")
			p.ClickAndLoad(`#config-file-form button[value="preview"]`)
		}, regexp.MustCompile(`config\.yaml:\d+(:\d+)?: .*unknown.*bogus_section`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p.Navigate(r.base + "/ui/config")
			p.WaitVisible("#config-key")
			tc.edit()
			p.WaitVisible("#config-error")
			msg := p.Text("#config-error")
			if !tc.want.MatchString(msg) {
				t.Errorf("the error %q does not match %s", msg, tc.want)
			}
			if p.Count("#config-key-apply, #config-file-apply") != 0 {
				t.Errorf("an Apply button is offered for an invalid edit")
			}
			after, err := os.ReadFile(r.path)
			if err != nil {
				t.Fatal(err)
			}
			if string(after) != string(before) {
				t.Fatalf("config.yaml changed on disk:\n%s", after)
			}
			p.NoScriptRan()
			r.noSecretShown(p)
		})
	}
}

// Issue 17: "Run now" on the Jobs page runs a job at once; its run and each
// delivery's status show on the page, and the reminder reaches Telegram.
func TestBrowserRunJobNowShowsDeliveryStatus(t *testing.T) {
	const text = "Stand-up starts in five minutes."
	r := startRig(t, rigOptions{Telegram: true, Jobs: fmt.Sprintf(`  - name: standup
    schedule: "0 9 * * 1-5"
    kind: reminder
    text: %q
    deliver_to: [telegram:%d]
`, text, stranger)})
	r.tg.AddChat(faketelegram.Chat{ID: stranger, Type: "private", FirstName: "Stan"})
	p := r.browse()
	p.Navigate(r.base + "/ui/jobs")
	row := `#jobs tr[data-job="standup"]`
	p.WaitText(row, "standup")
	p.WaitText(row+" .runs", "none yet")
	p.ClickAndLoad(row + ` form[action="/ui/jobs/run"] button`)
	reloadUntil(t, p, r.base+"/ui/jobs", "the run's delivery status",
		fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent.includes("telegram:%d: delivered")`, row+" .runs", stranger))
	eventually(t, "the reminder on Telegram", func() bool {
		for _, m := range r.tg.Sent(stranger) {
			if m.Plain == text {
				return true
			}
		}
		return false
	})
	p.NoScriptRan()
}

// Issue 17: the overview shows each channel's state live: Telegram goes
// down (getUpdates fails) and the row says so without a reload, then it
// comes back. The screenshot of the overview is taken here.
func TestBrowserOverviewShowsAChannelGoingDownAndBack(t *testing.T) {
	r := startRig(t, rigOptions{Telegram: true, LLM: fakellm.Echo()})
	// A few turns first, so the counters and charts have something to show.
	ch := r.d.WebChannel()
	convs := []string{"warmup-1", "warmup-2", "warmup-3"}
	for _, c := range convs {
		if _, err := ch.Post(context.Background(), c, "operator", "question in "+c); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "three answers", func() bool {
		n := 0
		for _, c := range convs {
			n += len(ch.History(c))
		}
		return n == len(convs)
	})
	p := r.browse()
	p.Navigate(r.base + "/ui/")
	state := `#channels tr[data-channel="telegram"] td:nth-child(2)`
	p.WaitFor("telegram connected", fmt.Sprintf(`(document.querySelector(%q) || {}).textContent === "connected"`, state))
	p.WaitText(`#channels tr[data-channel="web"]`, "connected")
	r.screenshot(p, "overview")

	// Three failed polls keep the adapter down for its backoff (0.5s, 1s,
	// 2s, longer than the overview's refresh); the live overview must show
	// it without a reload.
	r.tg.FailNext("getUpdates", 3, faketelegram.InternalError())
	r.tg.UserSays(stranger, "ping") // ends the long poll in flight, so the next ones fail
	p.WaitFor("telegram shown as not connected", fmt.Sprintf(`(document.querySelector(%q) || {}).textContent === "not connected"`, state))
	// A poll that succeeds returns only with an update (long polling).
	r.tg.UserSays(stranger, "ping again")
	p.WaitFor("telegram shown as connected again", fmt.Sprintf(`(document.querySelector(%q) || {}).textContent === "connected"`, state))
	p.NoScriptRan()
	r.noSecretShown(p)
}
