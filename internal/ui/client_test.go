package ui_test

// An HTTP client for the console tests that do not need a browser: it keeps
// cookies, never follows redirects (the tests look at them), logs in through
// the login form and reads the CSRF token from the page like a browser would.

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

type client struct {
	t    *testing.T
	base string
	hc   *http.Client
	csrf string
}

func newClient(t *testing.T, base string) *client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &client{t: t, base: base, hc: &http.Client{Jar: jar, Timeout: cWait,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// resp is an answer read whole.
type resp struct {
	Code   int
	Body   string
	Header http.Header
}

func (c *client) do(req *http.Request) resp {
	c.t.Helper()
	res, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read: %v", req.Method, req.URL.Path, err)
	}
	return resp{Code: res.StatusCode, Body: string(body), Header: res.Header}
}

func (c *client) get(path string) resp {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	return c.do(req)
}

// post sends a form; the CSRF token is added unless the form has "csrf"
// (an empty value sends none).
func (c *client) post(path string, form url.Values) resp {
	c.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", c.csrf)
	} else if form.Get("csrf") == "" {
		form.Del("csrf")
	}
	req, err := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req)
}

var (
	csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
	csrfAttr  = regexp.MustCompile(`data-csrf="([0-9a-f]+)"`)
)

// loginAttempt posts token through the login form.
func (c *client) loginAttempt(token string) resp {
	c.t.Helper()
	page := c.get("/ui/login")
	m := csrfField.FindStringSubmatch(page.Body)
	if m == nil {
		c.t.Fatalf("the login page has no CSRF field:\n%s", page.Body)
	}
	return c.post("/ui/login", url.Values{"csrf": {m[1]}, "token": {token}})
}

// login logs in and reads the session's CSRF token.
func (c *client) login(token string) {
	c.t.Helper()
	r := c.loginAttempt(token)
	if r.Code != http.StatusSeeOther || r.Header.Get("Location") != "/ui/" {
		c.t.Fatalf("login: %d %s\n%s", r.Code, r.Header.Get("Location"), r.Body)
	}
	home := c.get("/ui/")
	m := csrfAttr.FindStringSubmatch(home.Body)
	if home.Code != http.StatusOK || m == nil {
		c.t.Fatalf("after login /ui/ answered %d without a CSRF token", home.Code)
	}
	c.csrf = m[1]
}

// sseEvent is one Server-Sent Event.
type sseEvent struct{ Name, Data string }

// stream opens an event stream; events arrive on the channel until the
// test ends.
func (c *client) stream(path string) <-chan sseEvent {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	hc := *c.hc
	hc.Timeout = 0
	res, err := hc.Do(req)
	if err != nil {
		cancel()
		c.t.Fatalf("stream %s: %v", path, err)
	}
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		cancel()
		res.Body.Close()
		c.t.Fatalf("stream %s: %d %s", path, res.StatusCode, res.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		var ev sseEvent
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				ev.Data = strings.Join(data, "\n")
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
				ev, data = sseEvent{}, nil
			case strings.HasPrefix(line, "event: "):
				ev.Name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	c.t.Cleanup(func() {
		cancel()
		res.Body.Close()
		<-done
	})
	return out
}

// next waits for the next event named name (others are skipped).
func nextEvent(t *testing.T, events <-chan sseEvent, name string) sseEvent {
	t.Helper()
	deadline := time.After(cWait)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("the stream ended before a %q event", name)
			}
			if ev.Name == name {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %q event within %s", name, cWait)
		}
	}
}
