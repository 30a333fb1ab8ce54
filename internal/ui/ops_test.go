package ui_test

// Jobs, pairing and approvals through the console over HTTP.

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// flash is the message the page after a POST shows.
func flash(t *testing.T, c *client, got resp) string {
	t.Helper()
	if got.Code != http.StatusSeeOther {
		t.Fatalf("= %d, want a redirect:\n%s", got.Code, got.Body)
	}
	page := c.get(got.Header.Get("Location"))
	m := regexp.MustCompile(`(?s)<p class="flash" id="flash">(.*?)</p>`).FindStringSubmatch(page.Body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

func TestJobsCreateRunPauseDelete(t *testing.T) {
	r := startConsole(t, cOptions{})
	c := newClient(t, r.base)
	c.login(cAdminToken)
	cEventually(t, "the web channel running", r.d.WebChannel().Ready)
	form := url.Values{"name": {"stretch"}, "kind": {"reminder"}, "schedule": {"0 25 * * *"},
		"deliver_to": {"web:jobs"}, "body": {"Time to stretch"}, "misfire": {"skip"}}
	got := c.post("/ui/jobs/create", form)
	if got.Code != http.StatusUnprocessableEntity || !strings.Contains(got.Body, `id="job-error"`) || !strings.Contains(got.Body, "Time to stretch") {
		t.Fatalf("a bad schedule = %d; want the error with the form kept:\n%s", got.Code, got.Body)
	}
	form.Set("deliver_to", "nowhere:1")
	form.Set("schedule", "0 9 * * *")
	if got := c.post("/ui/jobs/create", form); got.Code != http.StatusUnprocessableEntity || !strings.Contains(got.Body, "unknown channel") {
		t.Errorf("a bad target = %d", got.Code)
	}
	form.Set("deliver_to", "web:jobs")
	if msg := flash(t, c, c.post("/ui/jobs/create", form)); !strings.Contains(msg, "Created reminder stretch") {
		t.Fatalf("create: %q", msg)
	}
	if msg := flash(t, c, c.post("/ui/jobs/run", url.Values{"name": {"stretch"}})); !strings.Contains(msg, "Ran stretch: ok") || !strings.Contains(msg, "web:jobs: delivered") {
		t.Errorf("run now: %q", msg)
	}
	if h := r.d.WebChannel().History("jobs"); len(h) != 1 || h[0].Text != "Time to stretch" {
		t.Errorf("the web chat got %+v", h)
	}
	page := c.get("/ui/jobs")
	if !strings.Contains(page.Body, `data-job="stretch"`) || !strings.Contains(page.Body, `<span class="ok">delivered</span>`) {
		t.Errorf("the jobs page lacks the run's delivery status")
	}
	if msg := flash(t, c, c.post("/ui/jobs/pause", url.Values{"name": {"stretch"}})); msg != "Paused stretch." {
		t.Errorf("pause: %q", msg)
	}
	if page := c.get("/ui/jobs"); !strings.Contains(page.Body, `action="/ui/jobs/resume"`) {
		t.Error("a paused job offers no Resume")
	}
	if msg := flash(t, c, c.post("/ui/jobs/resume", url.Values{"name": {"stretch"}})); msg != "Resumed stretch." {
		t.Errorf("resume: %q", msg)
	}
	if msg := flash(t, c, c.post("/ui/jobs/delete", url.Values{"name": {"stretch"}})); msg != "Deleted stretch." {
		t.Errorf("delete: %q", msg)
	}
	if msg := flash(t, c, c.post("/ui/jobs/run", url.Values{"name": {"stretch"}})); !strings.Contains(msg, "Could not run stretch") {
		t.Errorf("run of a deleted job: %q", msg)
	}
}

func TestPairingDeny(t *testing.T) {
	r := startConsole(t, cOptions{Telegram: true})
	const stranger = int64(4242)
	r.tg.UserSays(stranger, "hello", faketelegram.From(faketelegram.User{ID: stranger, FirstName: "Eve"}))
	code := regexp.MustCompile(`pairing approve ([A-Za-z0-9-]{4,})`)
	var got string
	cEventually(t, "a pairing code", func() bool {
		for _, m := range r.tg.Sent(stranger) {
			if c := code.FindStringSubmatch(m.Plain); c != nil {
				got = c[1]
			}
		}
		return got != ""
	})
	c := newClient(t, r.base)
	c.login(cAdminToken)
	if page := c.get("/ui/pairing"); !strings.Contains(page.Body, `data-code="`+got+`"`) || !strings.Contains(page.Body, "Eve") {
		t.Fatalf("the pairing page does not list %s", got)
	}
	if msg := flash(t, c, c.post("/ui/pairing/deny", url.Values{"code": {got}})); !strings.HasPrefix(msg, "Denied Eve") {
		t.Errorf("deny: %q", msg)
	}
	if page := c.get("/ui/pairing"); strings.Contains(page.Body, got) {
		t.Error("the denied code is still pending")
	}
	if msg := flash(t, c, c.post("/ui/pairing/approve", url.Values{"code": {got}})); !strings.Contains(msg, "No pending code") {
		t.Errorf("approving a denied code: %q", msg)
	}
	if audit := c.get("/ui/audit?kind=pairing"); !strings.Contains(audit.Body, "pairing.deny") {
		t.Error("the denial is not in the audit log")
	}
}

func TestApprovalFromTheConsole(t *testing.T) {
	llm := fakellm.Match(
		fakellm.Rule{When: fakellm.AfterToolResult, Respond: fakellm.Reply(fakellm.Response{Content: "It ran."})},
		fakellm.Rule{Respond: fakellm.Reply(fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "current_time", Arguments: `{}`}}})},
	)
	r := startConsole(t, cOptions{LLM: llm, Agent: "  require_approval: [current_time]\n"})
	c := newClient(t, r.base)
	c.login(cAdminToken)
	ch := r.d.WebChannel()
	cEventually(t, "the web channel running", ch.Ready)
	if _, err := ch.Post(context.Background(), "appr", "operator", "what time is it?"); err != nil {
		t.Fatal(err)
	}
	cEventually(t, "the call waiting for approval", func() bool {
		return strings.Contains(c.get("/ui/approvals").Body, "web:appr")
	})
	if msg := flash(t, c, c.post("/ui/approvals/approve", url.Values{"session": {"web:appr"}})); !strings.Contains(msg, "Approved") {
		t.Errorf("approve: %q", msg)
	}
	cEventually(t, "the answer after the approval", func() bool {
		for _, ev := range ch.History("appr") {
			if ev.Text == "It ran." {
				return true
			}
		}
		return false
	})
	if msg := flash(t, c, c.post("/ui/approvals/deny", url.Values{"session": {"web:appr"}})); !strings.Contains(msg, "Not decided") {
		t.Errorf("deciding twice: %q", msg)
	}
}
