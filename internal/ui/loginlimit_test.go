package ui_test

// Wrong admin tokens cannot lock the operator out: the login limits count
// wrong tokens only, a right token is never refused by them, and requests
// that came through a proxy on the same host are limited apart from direct
// local ones (the address `switchboard console` comes from).

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// fromAddr is a client whose connections come from the loopback address ip
// (127.0.0.0/8 is all loopback on Linux), as another host's would.
func fromAddr(t *testing.T, base, ip string) *client {
	t.Helper()
	c := newClient(t, base)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	c.hc.Transport = tr
	return c
}

// mintAuth asks for a login link with the Authorization header auth (and
// the extra headers hdr).
func (c *client) mintAuth(auth string, hdr http.Header) resp {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.base+"/ui/login/link", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", auth)
	return c.do(req)
}

// formLoginWith posts token through the login form, the post carrying hdr.
func (c *client) formLoginWith(token string, hdr http.Header) resp {
	c.t.Helper()
	page := c.get("/ui/login")
	m := csrfField.FindStringSubmatch(page.Body)
	if m == nil {
		c.t.Fatalf("the login page has no CSRF field:\n%s", page.Body)
	}
	form := url.Values{"csrf": {m[1]}, "token": {token}}
	req, err := http.NewRequest(http.MethodPost, c.base+"/ui/login", strings.NewReader(form.Encode()))
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req)
}

// The two ways in with the admin token, and what each answers when it lets
// the caller in.
var tokenDoors = []struct {
	name string
	ok   int
	try  func(c *client, token string, hdr http.Header) int
}{
	{"login link", http.StatusOK, func(c *client, token string, hdr http.Header) int {
		return c.mintAuth("Bearer "+token, hdr).Code
	}},
	{"login form", http.StatusSeeOther, func(c *client, token string, hdr http.Header) int {
		return c.formLoginWith(token, hdr).Code
	}},
}

// spend sends wrong tokens through guess until one is refused with 429; it
// fails the test on any answer but 401 and 429, or without a 429.
func spend(t *testing.T, what string, guess func(i int) int) {
	t.Helper()
	for i := range 40 {
		switch code := guess(i); code {
		case http.StatusTooManyRequests:
			return
		case http.StatusUnauthorized:
		default:
			t.Fatalf("%s: wrong token %d answered %d, want 401 or 429", what, i+1, code)
		}
	}
	t.Fatalf("%s: 40 wrong tokens and never a 429", what)
}

func proxied(i int) http.Header {
	return http.Header{"X-Forwarded-For": {"203.0.113." + string(rune('1'+i%9))}}
}

// Issue B1: strangers' wrong tokens (from other addresses, from one past
// its limit, through a proxy on this host, or enough to reach the global
// cap) never refuse the right token, through the login link (what
// `switchboard console` asks for) or the login form.
func TestWrongTokensCannotLockOutTheRightOne(t *testing.T) {
	cases := []struct {
		name   string
		attack func(t *testing.T, base string)
		// operator is who then logs in with the right token.
		operator string
		hdr      http.Header
	}{
		{
			name: "the same address past its limit (link)",
			attack: func(t *testing.T, base string) {
				c := fromAddr(t, base, "127.0.0.2")
				spend(t, "127.0.0.2", func(int) int { return c.mintAuth("Bearer wrong-token", nil).Code })
			},
			operator: "127.0.0.2",
		},
		{
			name: "the same address past its limit (form)",
			attack: func(t *testing.T, base string) {
				c := fromAddr(t, base, "127.0.0.2")
				spend(t, "127.0.0.2", func(int) int { return c.formLoginWith("wrong-token", nil).Code })
			},
			operator: "127.0.0.2",
		},
		{
			name: "strangers through a proxy on this host",
			attack: func(t *testing.T, base string) {
				c := fromAddr(t, base, "127.0.0.1")
				spend(t, "via a proxy", func(i int) int { return c.mintAuth("Bearer wrong-token", proxied(i)).Code })
				// A direct local caller's own typo is still only a wrong
				// token: the proxied guesses are in their own bucket.
				if got := c.mintAuth("Bearer typo", nil); got.Code != http.StatusUnauthorized {
					t.Errorf("a direct wrong token after proxied guesses: %d, want 401 (not limited)", got.Code)
				}
			},
			operator: "127.0.0.1",
		},
		{
			name: "a proxied operator, past the proxy's limit",
			attack: func(t *testing.T, base string) {
				c := fromAddr(t, base, "127.0.0.1")
				spend(t, "via a proxy", func(i int) int { return c.formLoginWith("wrong-token", proxied(i)).Code })
			},
			operator: "127.0.0.1",
			hdr:      proxied(0),
		},
		{
			name: "many addresses, past the global cap",
			attack: func(t *testing.T, base string) {
				for i := 2; i <= 9; i++ {
					ip := "127.0.0." + string(rune('0'+i))
					c := fromAddr(t, base, ip)
					spend(t, ip, func(int) int { return c.mintAuth("Bearer wrong-token", nil).Code })
				}
			},
			operator: "127.0.0.1",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := startConsole(t, cOptions{})
			tc.attack(t, r.base)
			for _, door := range tokenDoors {
				c := fromAddr(t, r.base, tc.operator)
				if got := door.try(c, cAdminToken, tc.hdr); got != door.ok {
					t.Errorf("%s with the right token from %s: %d, want %d", door.name, tc.operator, got, door.ok)
				}
			}
		})
	}
}

// RFC 7235: the auth scheme is case-insensitive.
func TestLoginLinkBearerSchemeAnyCase(t *testing.T) {
	r := startConsole(t, cOptions{})
	c := newClient(t, r.base)
	for _, auth := range []string{"bearer " + cAdminToken, "BEARER " + cAdminToken, "Bearer  " + cAdminToken} {
		if got := c.mintAuth(auth, nil); got.Code != http.StatusOK || !strings.Contains(got.Body, "/ui/login?once=") {
			t.Errorf("Authorization %q…: %d %q, want a link", auth[:7], got.Code, got.Body)
		}
	}
}

// A HEAD of a login link (a link checker, a preview) does not use it up:
// only the GET of a browser logs in.
func TestLoginLinkHeadDoesNotUseIt(t *testing.T) {
	r := startConsole(t, cOptions{})
	got := newClient(t, r.base).mint(cAdminToken, nil)
	if got.Code != http.StatusOK {
		t.Fatalf("mint: %d %s", got.Code, got.Body)
	}
	path := got.Body[strings.Index(got.Body, "/ui/login?once="):]
	path = path[:strings.IndexByte(path, '"')]
	peek := newClient(t, r.base)
	req, err := http.NewRequest(http.MethodHead, r.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := peek.do(req); res.Code == http.StatusSeeOther {
		t.Errorf("HEAD of the link logged in (303 to %q)", res.Header.Get("Location"))
	}
	if res := peek.get("/ui/sessions"); res.Code == http.StatusOK {
		t.Error("HEAD of the link left a session")
	}
	b := newClient(t, r.base)
	if res := b.get(path); res.Code != http.StatusSeeOther || res.Header.Get("Location") != "/ui/" {
		t.Fatalf("GET of the link after a HEAD: %d to %q, want 303 to /ui/ (the HEAD used it up)", res.Code, res.Header.Get("Location"))
	}
	if res := b.get("/ui/sessions"); res.Code != http.StatusOK {
		t.Errorf("after the link /ui/sessions = %d", res.Code)
	}
}
