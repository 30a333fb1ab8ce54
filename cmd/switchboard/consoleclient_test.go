package main

// A small web-console client for the binary tests (issue 28): it logs in
// through the login form with a token, keeps the session cookie, reads the
// CSRF token (and an editor's base hash) from the pages as a browser would,
// and never follows redirects, so a test sees the 303 a save answers with.

import (
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

type consoleClient struct {
	t    *testing.T
	base string // http://127.0.0.1:PORT
	hc   *http.Client
}

type consoleAnswer struct {
	code     int
	body     string
	location string
}

var (
	csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	baseField = regexp.MustCompile(`name="base" value="([^"]*)"`)
	textField = regexp.MustCompile(`(?s)<textarea name="text"[^>]*>(.*?)</textarea>`)
)

// loginConsole logs in at base with token and fails the test if the console
// does not let it in.
func loginConsole(t *testing.T, base, token string) *consoleClient {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &consoleClient{t: t, base: base, hc: &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	page := c.get("/ui/login")
	if page.code != http.StatusOK {
		t.Fatalf("GET /ui/login: %d\n%s", page.code, page.body)
	}
	a := c.post("/ui/login", url.Values{"csrf": {field(t, csrfField, page.body)}, "token": {token}, "next": {"/ui/"}})
	if a.code != http.StatusSeeOther || a.location != "/ui/" {
		t.Fatalf("log in: %d %q\n%s", a.code, a.location, a.body)
	}
	return c
}

func (c *consoleClient) do(req *http.Request) consoleAnswer {
	c.t.Helper()
	res, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	return consoleAnswer{code: res.StatusCode, body: string(body), location: res.Header.Get("Location")}
}

func (c *consoleClient) get(path string) consoleAnswer {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	return c.do(req)
}

func (c *consoleClient) post(path string, form url.Values) consoleAnswer {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req)
}

// submit loads page and posts form to action with the page's CSRF token.
func (c *consoleClient) submit(page, action string, form url.Values) consoleAnswer {
	c.t.Helper()
	p := c.get(page)
	if p.code != http.StatusOK {
		c.t.Fatalf("GET %s: %d\n%s", page, p.code, p.body)
	}
	form.Set("csrf", field(c.t, csrfField, p.body))
	return c.post(action, form)
}

// savePersona edits persona name in the console's persona editor: it opens
// the editor, passes text through edit and saves the result. It returns the
// save's answer.
func (c *consoleClient) savePersona(name string, edit func(string) string) consoleAnswer {
	c.t.Helper()
	page := "/ui/personas/edit?name=" + url.QueryEscape(name)
	p := c.get(page)
	if p.code != http.StatusOK {
		c.t.Fatalf("GET %s: %d\n%s", page, p.code, p.body)
	}
	text := html.UnescapeString(field(c.t, textField, p.body))
	return c.post("/ui/personas/save", url.Values{"csrf": {field(c.t, csrfField, p.body)}, "name": {name},
		"base": {field(c.t, baseField, p.body)}, "text": {edit(text)}})
}

func field(t *testing.T, re *regexp.Regexp, body string) string {
	t.Helper()
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the page has no %s:\n%s", re, body)
	}
	return m[1]
}
