package main

// Issue 28 item 3, on the built binary: the start line names the console's
// URL (never a token), `switchboard console` prints a one-time login link
// that logs a browser in once, the admin token survives a restart, and
// `switchboard token rotate` replaces it.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// consLog is the daemon's stderr, collected line by line; wait blocks until
// a line holds a text (or the daemon exits).
type consLog struct {
	mu    sync.Mutex
	lines []string
	more  chan struct{} // closed and replaced at every new line
	ended bool
}

func (l *consLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func (l *consLog) add(line string) {
	l.mu.Lock()
	l.lines = append(l.lines, line)
	close(l.more)
	l.more = make(chan struct{})
	l.mu.Unlock()
}

func (l *consLog) end() {
	l.mu.Lock()
	l.ended = true
	close(l.more)
	l.more = make(chan struct{})
	l.mu.Unlock()
}

// wait returns the first line holding text, or fails the test when the
// daemon exits or ctx ends first.
func (l *consLog) wait(ctx context.Context, t *testing.T, text string) string {
	t.Helper()
	for {
		l.mu.Lock()
		for _, line := range l.lines {
			if strings.Contains(line, text) {
				l.mu.Unlock()
				return line
			}
		}
		more, ended := l.more, l.ended
		l.mu.Unlock()
		if ended {
			t.Fatalf("the daemon exited without logging %q; log:\n%s", text, l.String())
		}
		select {
		case <-more:
		case <-ctx.Done():
			t.Fatalf("no %q in the daemon's log; log:\n%s", text, l.String())
		}
	}
}

// consDaemon is `switchboard run` started as the operator starts it.
type consDaemon struct {
	cmd  *exec.Cmd
	log  *consLog
	done chan struct{}
}

// startConsDaemon runs the daemon on cfg and waits until it logs that it runs.
func startConsDaemon(ctx context.Context, t *testing.T, cfg string, env []string) *consDaemon {
	t.Helper()
	cmd := exec.CommandContext(ctx, binPath, "--config", cfg, "run")
	cmd.Env = env
	cmd.Dir = filepath.Dir(cfg)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &consDaemon{cmd: cmd, log: &consLog{more: make(chan struct{})}, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			d.log.add(sc.Text())
		}
		d.log.end()
		_ = cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(d.stop)
	d.log.wait(ctx, t, "switchboard is running")
	return d
}

// stop ends the daemon with SIGTERM and waits for it.
func (d *consDaemon) stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	<-d.done
}

// consConfig writes a config for a daemon on addr (console chat off) and
// returns its path; extra is appended.
func consConfig(t *testing.T, llmURL, addr, extra string) string {
	t.Helper()
	return writeConfig(t, fmt.Sprintf(`bot:
  data_dir: ./data
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
channels:
  console:
    enabled: false
personas:
  dir: ./personas
server:
  listen: %s
%s`, llmURL, addr, extra))
}

func readToken(t *testing.T, cfg string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(filepath.Dir(cfg), "data", "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

var linkRE = regexp.MustCompile(`http://[^\s]+/ui/login\?once=([0-9a-f]{64})`)

// mintLink runs `switchboard console` and returns the link it printed.
func mintLink(t *testing.T, env []string, cfg string, args ...string) string {
	t.Helper()
	r := runBin(t, env, append([]string{"--config", cfg, "console"}, args...)...)
	m := linkRE.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("console: exit %d, no login link\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	return m[0]
}

// browser is an HTTP client with a cookie jar that does not follow redirects.
func browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 15 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func fetch(t *testing.T, c *http.Client, method, target string, form url.Values) (int, string, http.Header) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// loggedIn reports whether c's cookie opens the console's sessions page.
func loggedIn(t *testing.T, c *http.Client, base string) bool {
	t.Helper()
	code, body, _ := fetch(t, c, http.MethodGet, base+"/ui/sessions", nil)
	return code == http.StatusOK && strings.Contains(body, "Log out")
}

var loginCSRF = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// formLogin logs c in with token through the login form; it returns the status.
func formLogin(t *testing.T, c *http.Client, base, token string) int {
	t.Helper()
	_, page, _ := fetch(t, c, http.MethodGet, base+"/ui/login", nil)
	m := loginCSRF.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the login page has no CSRF field:\n%s", page)
	}
	code, _, _ := fetch(t, c, http.MethodPost, base+"/ui/login", url.Values{"csrf": {m[1]}, "token": {token}})
	return code
}

func TestBinaryConsoleLoginLink(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	addr := freePort(t)
	cfg := consConfig(t, llm.URL, addr, "")
	env := cleanEnv("SB_E2E_KEY=" + e2eKey)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d := startConsDaemon(ctx, t, cfg, env)
	base := "http://" + addr

	// The start line names the console and how to get in, never a token.
	line := d.log.wait(ctx, t, "console: "+base+"/ui/")
	if !strings.Contains(line, "switchboard console") {
		t.Errorf("the console line does not say how to log in: %s", line)
	}
	token := readToken(t, cfg)

	link := mintLink(t, env, cfg)
	if !strings.HasPrefix(link, base+"/ui/login?once=") {
		t.Fatalf("link %q is not on the console at %s", link, base)
	}

	// The link logs a browser in: the cookie opens the console.
	first := browser(t)
	code, _, hdr := fetch(t, first, http.MethodGet, link, nil)
	if code != http.StatusSeeOther || hdr.Get("Location") != "/ui/" {
		t.Fatalf("following the link: %d to %q, want 303 to /ui/", code, hdr.Get("Location"))
	}
	if !loggedIn(t, first, base) {
		t.Fatal("the link's session cookie does not open /ui/sessions")
	}

	// A second use fails, and logs nobody in.
	second := browser(t)
	code, body, _ := fetch(t, second, http.MethodGet, link, nil)
	if code != http.StatusUnauthorized || !strings.Contains(body, "switchboard console") {
		t.Errorf("second use of the link: %d, want 401 with the way to a new one\n%s", code, body)
	}
	if loggedIn(t, second, base) {
		t.Error("a used link logged a second browser in")
	}

	// Followed by many at once, one link logs exactly one browser in.
	link2 := mintLink(t, env, cfg)
	const n = 8
	codes := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, link2, nil)
			resp, err := browser(t).Do(req)
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(codes)
	wins := 0
	for c := range codes {
		if c == http.StatusSeeOther {
			wins++
		}
	}
	if wins != 1 {
		t.Errorf("%d of %d concurrent uses of one link logged in, want 1", wins, n)
	}

	// An expired link fails.
	expired := mintLink(t, env, cfg, "--expires", "1ns")
	late := browser(t)
	if code, body, _ := fetch(t, late, http.MethodGet, expired, nil); code != http.StatusUnauthorized {
		t.Errorf("expired link: %d, want 401\n%s", code, body)
	}
	if loggedIn(t, late, base) {
		t.Error("an expired link logged a browser in")
	}
	if r := runBin(t, env, "--config", cfg, "console", "--expires", "1h"); r.code != 2 || !strings.Contains(r.stderr, "--expires") {
		t.Errorf("console --expires 1h: exit %d, want 2 naming the limit\n%s", r.code, r.stderr)
	}

	d.stop()
	log := d.log.String()
	for _, secret := range []string{token, linkRE.FindStringSubmatch(link)[1], linkRE.FindStringSubmatch(link2)[1], e2eKey} {
		if strings.Contains(log, secret) {
			t.Errorf("the daemon's log shows a secret (%.6s…)", secret)
		}
	}
}

func TestBinaryAdminTokenStableAndRotate(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	addr := freePort(t)
	base := "http://" + addr
	cfg := consConfig(t, llm.URL, addr, "")
	env := cleanEnv("SB_E2E_KEY=" + e2eKey)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	d := startConsDaemon(ctx, t, cfg, env)
	t1 := readToken(t, cfg)
	d.stop()
	d = startConsDaemon(ctx, t, cfg, env)
	if t2 := readToken(t, cfg); t2 != t1 {
		t.Fatal("the admin token changed across a restart")
	}
	if code := formLogin(t, browser(t), base, t1); code != http.StatusSeeOther {
		t.Fatalf("login with the token kept across the restart: %d", code)
	}

	// Rotated while the daemon runs: the running daemon keeps the token it
	// has, and so does the file the CLI reads, until the restart.
	r := runBin(t, env, "--config", cfg, "token", "rotate")
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "restart") {
		t.Fatalf("token rotate while running: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, t1) {
		t.Error("token rotate printed the token")
	}
	if readToken(t, cfg) != t1 {
		t.Error("token rotate changed admin.token under the running daemon")
	}
	mintLink(t, env, cfg) // the CLI still gets in

	d.stop()
	d = startConsDaemon(ctx, t, cfg, env)
	t2 := readToken(t, cfg)
	if t2 == t1 {
		t.Fatal("the restart after token rotate kept the old token")
	}
	if code := formLogin(t, browser(t), base, t1); code != http.StatusUnauthorized {
		t.Errorf("login with the rotated-out token: %d, want 401", code)
	}
	if code := formLogin(t, browser(t), base, t2); code != http.StatusSeeOther {
		t.Errorf("login with the new token: %d, want 303", code)
	}
	for _, l := range []string{t1, t2} {
		if strings.Contains(d.log.String(), l) {
			t.Error("the daemon's log shows an admin token")
		}
	}
	d.stop()

	// With the daemon stopped the file changes at once.
	r = runBin(t, env, "--config", cfg, "token", "rotate")
	if r.code != 0 {
		t.Fatalf("token rotate while stopped: exit %d\n%s", r.code, r.stderr)
	}
	if t3 := readToken(t, cfg); t3 == t2 || len(t3) != 64 {
		t.Error("token rotate with the daemon stopped did not write a new token")
	}

	// server.admin_token in the config wins, and rotate says so.
	cfg2 := consConfig(t, llm.URL, addr, "  admin_token: ${SB_ADMIN}\n")
	r = runBin(t, append(env, "SB_ADMIN=configured-admin-token-0123456789"), "--config", cfg2, "token", "rotate")
	if !strings.Contains(r.stdout+r.stderr, "server.admin_token is set") {
		t.Errorf("token rotate with server.admin_token: exit %d, does not say the configured token wins\nstdout: %s\nstderr: %s",
			r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "configured-admin-token") {
		t.Error("token rotate printed server.admin_token")
	}
}
