package ui_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/internal/ui"
)

// mint asks for a login link with the bearer token tok and form.
func (c *client) mint(tok string, form url.Values) resp {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.base+"/ui/login/link", strings.NewReader(form.Encode()))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return c.do(req)
}

// Issue 28: a login link is given only for an admin token (either one),
// wrong tokens are rate limited like the login form's, its lifetime is
// bounded, and following it logs in once. Neither token shows in the log
// or the audit.
func TestLoginLinkNeedsTheAdminToken(t *testing.T) {
	r := startConsole(t, cOptions{})
	local, err := os.ReadFile(filepath.Join(r.dir, "data", daemon.AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	r.secrets = append(r.secrets, strings.TrimSpace(string(local)))
	c := newClient(t, r.base)

	cases := []struct {
		name string
		tok  string
		form url.Values
		code int
		body string
	}{
		{"no token", "", nil, http.StatusUnauthorized, "needs the admin token"},
		{"ttl over the bound", cAdminToken, url.Values{"ttl": {"16m"}}, http.StatusBadRequest, "at most 15m"},
		{"ttl not a duration", cAdminToken, url.Values{"ttl": {"soon"}}, http.StatusBadRequest, "at most 15m"},
		{"server.admin_token", cAdminToken, nil, http.StatusOK, ui.LinkPath},
		{"the local token", strings.TrimSpace(string(local)), url.Values{"ttl": {"1m"}}, http.StatusOK, ui.LinkPath},
	}
	var links []string
	for _, tc := range cases {
		got := c.mint(tc.tok, tc.form)
		if got.Code != tc.code || !strings.Contains(got.Body, tc.body) {
			t.Errorf("%s: %d %q, want %d with %q", tc.name, got.Code, got.Body, tc.code, tc.body)
			continue
		}
		if got.Code == http.StatusOK {
			var l ui.LoginLink
			if err := json.Unmarshal([]byte(got.Body), &l); err != nil {
				t.Fatal(err)
			}
			links = append(links, l.Path)
			r.secrets = append(r.secrets, strings.TrimPrefix(l.Path, ui.LinkPath))
		}
	}
	if len(links) != 2 {
		t.Fatalf("%d links, want 2", len(links))
	}
	for _, link := range links {
		b := newClient(t, r.base)
		if got := b.get(link); got.Code != http.StatusSeeOther || got.Header.Get("Location") != "/ui/" {
			t.Fatalf("following %s: %d to %q", link, got.Code, got.Header.Get("Location"))
		}
		if got := b.get("/ui/audit"); got.Code != http.StatusOK {
			t.Fatalf("after the link /ui/audit = %d", got.Code)
		}
		if got := newClient(t, r.base).get(link); got.Code != http.StatusUnauthorized || !strings.Contains(got.Body, "used already or has expired") {
			t.Errorf("second use: %d, want 401 saying the link is spent", got.Code)
		}
	}
	audit := newClient(t, r.base)
	audit.login(cAdminToken)
	page := audit.get("/ui/audit?kind=ui").Body
	if !strings.Contains(page, "one-time login link") {
		t.Error("the audit does not record the login by link")
	}
	for _, s := range r.secrets {
		if strings.Contains(page, s) {
			t.Errorf("the audit page shows a secret (%.6s…)", s)
		}
	}
}

// Wrong tokens are limited per address like the login form's: 5, then 429
// for the next wrong one; the right one still gets a link (B1: a stranger's
// guesses must not lock the operator out).
func TestLoginLinkGuessesAreLimited(t *testing.T) {
	r := startConsole(t, cOptions{})
	c := newClient(t, r.base)
	for i := range 5 {
		if got := c.mint("wrong-token", nil); got.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i+1, got.Code)
		}
	}
	if got := c.mint("wrong-token", nil); got.Code != http.StatusTooManyRequests || got.Header.Get("Retry-After") == "" {
		t.Errorf("a 6th wrong token: %d (Retry-After %q), want 429 with Retry-After", got.Code, got.Header.Get("Retry-After"))
	}
	if got := c.mint(cAdminToken, nil); got.Code != http.StatusOK {
		t.Errorf("the right token after 6 wrong ones: %d, want 200", got.Code)
	}
}
