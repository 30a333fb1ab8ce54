package chaos

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/loadtest"
)

// startWithEnv runs a new daemon of the rig with env instead of the
// platforms' full environment and waits until it is ready.
func (r *rig) startWithEnv(env []string) *loadtest.Proc {
	r.t.Helper()
	proc, err := loadtest.StartProc(r.bin, r.cfg, r.addr, env)
	if err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	r.procs = append(r.procs, proc)
	r.mu.Unlock()
	if _, err := proc.WaitReady(context.Background(), readyWait); err != nil {
		r.t.Fatalf("%v\n%s", err, proc.Output())
	}
	r.prog.note()
	return proc
}

// envWithout is the platforms' environment without the variables named.
func envWithout(p *loadtest.Platforms, names ...string) []string {
	var out []string
	for _, kv := range p.Env() {
		keep := true
		for _, n := range names {
			keep = keep && !strings.HasPrefix(kv, n+"=")
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

// pairingCode waits for the pairing code the bot sent to harness chat c.
func pairingCode(t *testing.T, p *loadtest.Platforms, c int) string {
	t.Helper()
	var code string
	if !until(func() bool {
		for _, m := range botMessages(p, c) {
			if _, rest, ok := strings.Cut(m, "pairing approve "); ok {
				if got, _, ok := strings.Cut(rest, ")"); ok {
					code = strings.TrimSpace(got)
					return true
				}
			}
		}
		return false
	}) {
		t.Fatalf("no pairing code; bot said %q", botMessages(p, c))
	}
	return code
}

// TestAdminRefusesBrowserCrossSiteRequests: with the daemon on loopback and
// no server.admin_token, the admin endpoints are open to local callers. A web
// page the operator happens to visit can make the browser send requests
// there too: a cross-site form POST (no CORS preflight) to approve the
// attacker's own pairing code, or — after DNS rebinding evil.example to
// 127.0.0.1 — a same-"origin" GET that reads every conversation. Such
// requests carry an Origin / Sec-Fetch-Site of another site or a Host that
// is not the loopback address; the daemon refuses them (403) and the
// attacker stays unpaired. A plain local request (curl) still works.
func TestAdminRefusesBrowserCrossSiteRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: runs the daemon binary")
	}
	r := newRig(t, loadtest.ModelOptions{}, loadtest.ConfigOptions{AccessMode: "pairing"})
	r.startWithEnv(envWithout(r.p, "SWITCHBOARD_ADMIN_TOKEN"))
	attacker := 0 // a Telegram stranger
	r.p.Say(attacker, "let me in")
	code := pairingCode(t, r.p, attacker)

	do := func(method, path string, form url.Values, hdr map[string]string) int {
		t.Helper()
		var req *http.Request
		if form != nil {
			req, _ = http.NewRequest(method, "http://"+r.addr+path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		} else {
			req, _ = http.NewRequest(method, "http://"+r.addr+path, nil)
		}
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	_, port, _ := strings.Cut(r.addr, ":")
	browser := []struct {
		name   string
		method string
		path   string
		form   url.Values
		hdr    map[string]string
	}{
		{"cross-site form POST approving the attacker's code", http.MethodPost, "/admin/pairing/approve", url.Values{"code": {code}},
			map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}},
		{"cross-site POST with only an Origin (older browser)", http.MethodPost, "/admin/pairing/approve", url.Values{"code": {code}},
			map[string]string{"Origin": "https://evil.example"}},
		{"cross-site POST with Origin: null (sandboxed iframe)", http.MethodPost, "/admin/pairing/approve", url.Values{"code": {code}},
			map[string]string{"Origin": "null"}},
		{"cross-site POST resetting a session", http.MethodPost, "/admin/sessions/reset", url.Values{"key": {"telegram:1"}},
			map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}},
		{"cross-site POST to the chat endpoint", http.MethodPost, "/admin/chat", url.Values{"text": {"hello"}},
			map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}},
		{"DNS-rebound GET of the sessions", http.MethodGet, "/admin/sessions", nil,
			map[string]string{"Host": "evil.example:" + port}},
		{"DNS-rebound GET of pending pairing codes", http.MethodGet, "/admin/pairing", nil,
			map[string]string{"Host": "evil.example:" + port, "Sec-Fetch-Site": "same-origin"}},
		{"DNS-rebound POST approving the code", http.MethodPost, "/admin/pairing/approve", url.Values{"code": {code}},
			map[string]string{"Host": "evil.example:" + port, "Origin": "http://evil.example:" + port, "Sec-Fetch-Site": "same-origin"}},
	}
	for _, b := range browser {
		if got := do(b.method, b.path, b.form, b.hdr); got != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", b.name, got)
		}
	}
	// The attacker is still a stranger: the next message gets no answer from
	// the model.
	r.p.Say(attacker, "am I in? "+loadtest.Token(attacker, 1))
	until(func() bool { return r.metric("switchboard_messages_in_total", `channel="telegram"`) >= 2 })
	time.Sleep(700 * time.Millisecond) // a paired attacker's message would reach the model now
	if strings.Contains(modelSaw(r.p), loadtest.Token(attacker, 1)) {
		t.Fatal("the attacker got paired through the browser: their message reached the model")
	}
	// Local callers without a browser still work without a token.
	for _, c := range []struct {
		name string
		hdr  map[string]string
	}{
		{"plain", nil},
		{"Host localhost", map[string]string{"Host": "localhost:" + port}},
		{"same-origin browser page on the daemon", map[string]string{"Origin": "http://" + r.addr, "Sec-Fetch-Site": "same-origin"}},
	} {
		if got := do(http.MethodGet, "/admin/sessions", nil, c.hdr); got != http.StatusOK {
			t.Errorf("local GET /admin/sessions (%s): status %d, want 200", c.name, got)
		}
	}
	if got := do(http.MethodPost, "/admin/pairing/approve", url.Values{"code": {code}}, nil); got != http.StatusOK {
		t.Errorf("local approve: status %d, want 200", got)
	}
}

// TestAskThroughDaemonBigQuestions: `switchboard ask` while the daemon runs
// sends the question form-encoded to /admin/ask. A question under the 1 MiB
// limit in a non-Latin script is up to three times that size encoded (every
// byte %XX); the daemon cut the body at 2 MiB, the form then parsed as empty
// and the user was told "the session key is empty". Now such a question is
// answered, and a body over the bound (10 MB straight at the endpoint) gets
// 413 naming the limit, not a wrong explanation.
func TestAskThroughDaemonBigQuestions(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: runs the daemon binary")
	}
	r := newRig(t, loadtest.ModelOptions{}, loadtest.ConfigOptions{})
	r.start()
	// 9 arguments of 100 KB of Cyrillic: 900 KB, under the limit and
	// within the kernel's argument limits.
	args := []string{"--config", r.cfg, "ask"}
	word := strings.Repeat("ж", 50<<10)
	for range 9 {
		args = append(args, word)
	}
	cmd := exec.Command(r.bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, r.p.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "session key") {
		t.Errorf("ask with a 900 KB question: err %v, output %.300q", err, out)
	}
	if n := r.p.LLM.RequestCount(); n != 1 {
		t.Errorf("the model was asked %d times, want once", n)
	}
	for _, path := range []string{"/admin/ask", "/admin/chat"} {
		body := url.Values{"session": {"cli:ask"}, "text": {strings.Repeat("q", 10<<20)}}.Encode()
		req, _ := http.NewRequest(http.MethodPost, "http://"+r.addr+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+loadtest.AdminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(msg), "at most") {
			t.Errorf("POST %s with a 10 MB question: %d %q, want 413 naming the limit", path, resp.StatusCode, msg)
		}
	}
}
