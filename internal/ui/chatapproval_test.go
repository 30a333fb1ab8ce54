package ui_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
)

var cardDetail = regexp.MustCompile(`name="detail" value="([^"]*)"`)

// postJSON posts form as app.js does (the X-CSRF-Token header).
func postJSON(t *testing.T, c *client, path string, form url.Values) resp {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-CSRF-Token", c.csrf)
	return c.do(req)
}

// Issue 34, item 1 (attacks on the approval card's route): a forged POST
// without the CSRF token, a card's click sent for another chat, a stale
// card (another call waits now) and a made-up decision are all refused and
// decide nothing; the real card's click decides the call as the operator's
// /approve in that chat would (the tool runs, audited as approval.approve
// by web:user:operator).
func TestChatApprovalRouteDecidesOnlyItsOwnCall(t *testing.T) {
	r := startConsole(t, cOptions{Agent: "  require_approval: [current_time]\n", LLM: fakellm.Match(
		fakellm.Rule{When: fakellm.AfterToolResult, Respond: fakellm.Reply(fakellm.Response{Content: "It ran."})},
		fakellm.Rule{Respond: fakellm.Reply(fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "current_time", Arguments: `{}`}}})},
	)})
	c := newClient(t, r.base)
	c.login(cAdminToken)
	ch := r.d.WebChannel()
	cEventually(t, "the web channel running", ch.Ready)
	if _, err := ch.Post(context.Background(), "waits", "operator", "what time is it?"); err != nil {
		t.Fatal(err)
	}
	var detail string
	cEventually(t, "the approval card on the chat page", func() bool {
		m := cardDetail.FindStringSubmatch(c.get("/ui/chat?conv=waits").Body)
		if m != nil {
			detail = html.UnescapeString(m[1])
		}
		return m != nil
	})
	form := func(conv, decision, detail string) url.Values {
		return url.Values{"conv": {conv}, "decision": {decision}, "detail": {detail}}
	}
	attacks := []struct {
		name string
		send func() resp
		code int
		says string
	}{
		{"forged, without the CSRF token", func() resp {
			f := form("waits", "approve", detail)
			f.Set("csrf", "")
			return c.post("/ui/chat/approval", f)
		}, http.StatusForbidden, "CSRF"},
		{"for another chat", func() resp { return postJSON(t, c, "/ui/chat/approval", form("other", "approve", detail)) },
			http.StatusConflict, "nothing is waiting"},
		{"a stale card (another call)", func() resp {
			return postJSON(t, c, "/ui/chat/approval", form("waits", "approve", `current_time {"zone":"Mars"}`))
		}, http.StatusConflict, "no longer the one waiting"},
		{"not a decision", func() resp { return postJSON(t, c, "/ui/chat/approval", form("waits", "maybe", detail)) },
			http.StatusBadRequest, "approve or deny"},
		{"a bad chat id", func() resp { return postJSON(t, c, "/ui/chat/approval", form("../x", "approve", detail)) },
			http.StatusBadRequest, "not a chat id"},
	}
	for _, a := range attacks {
		got := a.send()
		if got.Code != a.code || !strings.Contains(got.Body, a.says) {
			t.Errorf("%s: %d %q, want %d saying %q", a.name, got.Code, got.Body, a.code, a.says)
		}
	}
	if !strings.Contains(c.get("/ui/approvals").Body, "web:waits") {
		t.Fatal("an attack decided the waiting call")
	}
	for _, rec := range audits(t, r, "web:waits") {
		if rec.Action == "approval.approve" || rec.Action == "approval.deny" {
			t.Fatalf("an attack was audited as a decision: %+v", rec)
		}
	}

	if got := postJSON(t, c, "/ui/chat/approval", form("waits", "approve", detail)); got.Code != http.StatusNoContent {
		t.Fatalf("the card's Approve: %d %q", got.Code, got.Body)
	}
	cEventually(t, "the approved turn's answer", func() bool {
		turns, err := r.d.Store().SessionTurns(context.Background(), "web:waits")
		return err == nil && len(turns) == 1 && turns[0].Answer == "It ran."
	})
	var approved bool
	for _, rec := range audits(t, r, "web:waits") {
		approved = approved || rec.Action == "approval.approve" && rec.Actor == "web:user:operator"
	}
	if !approved {
		t.Errorf("no approval.approve by web:user:operator in the audit: %+v", audits(t, r, "web:waits"))
	}
}

func audits(t *testing.T, r *cRig, key string) []memory.AuditRecord {
	t.Helper()
	recs, err := r.d.Store().ListAudit(context.Background(), memory.AuditFilter{Session: key, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
