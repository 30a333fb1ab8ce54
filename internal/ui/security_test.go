package ui_test

// Security of the console without a browser: the real daemon (the rig of
// browser_rig_test.go) over HTTP.

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/internal/ui"
)

// routes are every console route with a method; each must refuse a request
// without a session.
var routes = []struct{ method, path string }{
	{"GET", "/ui/"}, {"GET", "/ui/live/overview"}, {"GET", "/ui/chat"}, {"GET", "/ui/chat?conv=abc"},
	{"GET", "/ui/chat/stream?conv=abc"}, {"POST", "/ui/chat/new"}, {"POST", "/ui/chat/send"}, {"POST", "/ui/chat/persona"},
	{"GET", "/ui/sessions"}, {"GET", "/ui/sessions/show?key=web:abc"}, {"GET", "/ui/sessions/export?key=web:abc"},
	{"POST", "/ui/sessions/reset"}, {"GET", "/ui/jobs"}, {"POST", "/ui/jobs/create"}, {"POST", "/ui/jobs/run"},
	{"POST", "/ui/jobs/pause"}, {"POST", "/ui/jobs/resume"}, {"POST", "/ui/jobs/delete"}, {"GET", "/ui/personas"},
	{"GET", "/ui/personas/edit?name=assistant"}, {"POST", "/ui/personas/save"}, {"GET", "/ui/config"},
	{"POST", "/ui/config/key"}, {"POST", "/ui/config/file"}, {"GET", "/ui/pairing"}, {"POST", "/ui/pairing/approve"},
	{"POST", "/ui/pairing/deny"}, {"GET", "/ui/audit"}, {"GET", "/ui/approvals"}, {"POST", "/ui/approvals/approve"},
	{"POST", "/ui/approvals/deny"}, {"POST", "/ui/logout"}, {"GET", "/ui/nope"}, {"GET", "/ui/live/attention"},
}

func TestNothingAnswersWithoutASession(t *testing.T) {
	r := startConsole(t, cOptions{})
	c := newClient(t, r.base)
	for _, rt := range routes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			var got resp
			if rt.method == "GET" {
				got = c.get(rt.path)
			} else {
				got = c.post(rt.path, url.Values{"csrf": {""}, "key": {"web:abc"}, "name": {"x"}})
			}
			switch got.Code {
			case http.StatusSeeOther:
				if loc := got.Header.Get("Location"); !strings.HasPrefix(loc, "/ui/login") {
					t.Errorf("redirects to %q, want the login page", loc)
				}
			case http.StatusUnauthorized, http.StatusNotFound:
			default:
				t.Errorf("answered %d without a session:\n%s", got.Code, got.Body)
			}
			if strings.Contains(got.Body, "<nav") || strings.Contains(got.Body, "data-csrf") {
				t.Errorf("a console page was served without a session")
			}
			if got.Header.Get("Content-Security-Policy") != ui.CSP && got.Code != http.StatusNotFound {
				t.Errorf("Content-Security-Policy = %q", got.Header.Get("Content-Security-Policy"))
			}
		})
	}
	if got := c.get("/ui/static/"); got.Code != http.StatusNotFound {
		t.Errorf("GET /ui/static/ = %d, want 404 (no listings)", got.Code)
	}
	for _, open := range []string{"/ui/login", "/ui/static/app.js", "/ui/static/style.css"} {
		if got := c.get(open); got.Code != http.StatusOK {
			t.Errorf("GET %s = %d without a session, want 200", open, got.Code)
		}
	}
	if got := c.get("/"); got.Code != http.StatusSeeOther || got.Header.Get("Location") != "/ui/" {
		t.Errorf("GET / = %d → %q, want a redirect to /ui/", got.Code, got.Header.Get("Location"))
	}
	login := c.get("/ui/login")
	for h, want := range map[string]string{"Content-Security-Policy": ui.CSP, "X-Content-Type-Options": "nosniff",
		"Referrer-Policy": "no-referrer"} {
		if got := login.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if strings.Contains(login.Body, "<script>") || strings.Contains(login.Body, " style=") {
		t.Error("the login page has inline script or style")
	}
}

func TestSessionCookieAndLogout(t *testing.T) {
	r := startConsole(t, cOptions{})
	c := newClient(t, r.base)
	got := c.loginAttempt(cAdminToken)
	var cookie string
	for _, sc := range got.Header.Values("Set-Cookie") {
		if strings.HasPrefix(sc, "sb_session=") {
			cookie = sc
		}
	}
	for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=/ui/"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("session cookie %q lacks %s", cookie, want)
		}
	}
	if strings.Contains(cookie, "Secure") {
		t.Errorf("session cookie %q is Secure over plain HTTP (the browser would drop it)", cookie)
	}
	c = newClient(t, r.base)
	c.login(cAdminToken)
	if got := c.post("/ui/logout", nil); got.Code != http.StatusSeeOther {
		t.Fatalf("logout = %d", got.Code)
	}
	if got := c.get("/ui/sessions"); got.Code != http.StatusSeeOther {
		t.Errorf("after logout /ui/sessions = %d, want a redirect to the login", got.Code)
	}
}

func TestLocalAdminTokenLogsIn(t *testing.T) {
	r := startConsole(t, cOptions{})
	tok, err := os.ReadFile(filepath.Join(r.dir, "data", daemon.AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	r.secrets = append(r.secrets, strings.TrimSpace(string(tok)))
	newClient(t, r.base).login(strings.TrimSpace(string(tok)))
}

func TestPostWithoutCSRFIsRefused(t *testing.T) {
	r := startConsole(t, cOptions{})
	c := newClient(t, r.base)
	c.login(cAdminToken)
	cases := []struct {
		name string
		csrf string
		hdr  map[string]string
		want int
	}{
		{"no token", "", nil, http.StatusForbidden},
		{"wrong token", strings.Repeat("ab", 32), nil, http.StatusForbidden},
		{"right token from another site", c.csrf, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"right token", c.csrf, nil, http.StatusSeeOther},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"csrf": {tc.csrf}, "persona": {"buddy"}, "conv": {"csrf1"}}
			req, err := http.NewRequest(http.MethodPost, r.base+"/ui/chat/persona", strings.NewReader(form.Encode()))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range tc.hdr {
				req.Header.Set(k, v)
			}
			if tc.csrf == "" {
				req.Body = http.NoBody
			}
			if got := c.do(req); got.Code != tc.want {
				t.Errorf("= %d, want %d: %s", got.Code, tc.want, got.Body)
			}
		})
	}
	// The login form itself needs its token.
	anon := newClient(t, r.base)
	if got := anon.post("/ui/login", url.Values{"csrf": {""}, "token": {cAdminToken}}); got.Code != http.StatusForbidden {
		t.Errorf("login without its CSRF token = %d, want 403", got.Code)
	}
}

func TestLoginAttemptsAreRateLimited(t *testing.T) {
	r := startConsole(t, cOptions{})
	c := newClient(t, r.base)
	var codes []int
	for range 6 {
		codes = append(codes, c.loginAttempt("wrong-token").Code)
	}
	for i, code := range codes[:5] {
		if code != http.StatusUnauthorized {
			t.Errorf("attempt %d = %d, want 401", i+1, code)
		}
	}
	if codes[5] != http.StatusTooManyRequests {
		t.Errorf("attempt 6 = %d, want 429", codes[5])
	}
	if got := c.loginAttempt("wrong-token"); got.Code != http.StatusTooManyRequests || !strings.Contains(got.Body, "Too many wrong tokens") {
		t.Errorf("a wrong token while limited = %d, want 429 with an explanation", got.Code)
	}
	// Only wrong tokens are limited: the right one still logs in (B1).
	if got := c.loginAttempt(cAdminToken); got.Code != http.StatusSeeOther {
		t.Errorf("the right token while limited = %d, want 303", got.Code)
	}
}

// TestOversizedFormIsRefusedAsTooLarge: a form over the console's bound
// (4 MiB) is refused as too large, not as a wrong CSRF token (the token sits
// in the body the bound cut), and the bound holds when the token comes in the
// X-CSRF-Token header too: nothing is written.
func TestOversizedFormIsRefusedAsTooLarge(t *testing.T) {
	r := startConsole(t, cOptions{})
	c := newClient(t, r.base)
	c.login(cAdminToken)
	file := filepath.Join(r.dir, "personas", "huge.md")
	text := "---\ndescription: huge\n---\n" + strings.Repeat("You are very thorough. ", 5<<20/23)
	for _, header := range []bool{false, true} {
		form := url.Values{"name": {"huge"}, "new": {"1"}, "text": {text}}
		if !header {
			form.Set("csrf", c.csrf)
		}
		req, err := http.NewRequest(http.MethodPost, r.base+"/ui/personas/save", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if header {
			req.Header.Set("X-CSRF-Token", c.csrf)
		}
		got := c.do(req)
		if got.Code != http.StatusRequestEntityTooLarge || !strings.Contains(got.Body, "4 MiB") {
			t.Errorf("a 5 MiB persona (token in the header: %v) = %d %q, want 413 naming the limit", header, got.Code, clipText(got.Body))
		}
		if _, err := os.Stat(file); err == nil {
			t.Fatalf("the oversized persona was written (token in the header: %v)", header)
		}
	}
}

func clipText(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
