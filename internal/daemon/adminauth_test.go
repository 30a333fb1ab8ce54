package daemon_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels/telegram"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// adminCall sends method path to the daemon with the given headers and
// returns the status and body.
func adminCall(t *testing.T, r *rig, method, path string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, r.url()+path, strings.NewReader("code=NOPE1234"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	b.Write(buf[:n])
	return resp.StatusCode, b.String()
}

func localToken(t *testing.T, cfg *config.Config) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cfg.Bot.DataDir, daemon.AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// Issue 13 defect 5: with server.listen on loopback and no admin_token, a
// request that came through a reverse proxy on the same host (it arrives from
// 127.0.0.1) could list pairing codes and approve itself. Without a token only
// a direct loopback request without proxy headers is served.
func TestAdminRefusesProxiedRequestsWithoutToken(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	cfg := baseConfig(t, llm)
	r := startDaemon(t, cfg)
	tok := localToken(t, cfg)
	cases := []struct {
		name   string
		hdr    map[string]string
		status int
	}{
		{"plain loopback request", nil, http.StatusOK},
		{"X-Forwarded-For", map[string]string{"X-Forwarded-For": "203.0.113.9"}, http.StatusForbidden},
		{"X-Forwarded-For naming loopback", map[string]string{"X-Forwarded-For": "127.0.0.1"}, http.StatusForbidden},
		{"Forwarded", map[string]string{"Forwarded": "for=203.0.113.9;proto=https"}, http.StatusForbidden},
		{"X-Real-IP", map[string]string{"X-Real-IP": "203.0.113.9"}, http.StatusForbidden},
		{"X-Forwarded-Host", map[string]string{"X-Forwarded-Host": "bot.example.com"}, http.StatusForbidden},
		{"proxied with the local token", map[string]string{"X-Forwarded-For": "203.0.113.9", "Authorization": "Bearer " + tok}, http.StatusOK},
		{"proxied with a wrong token", map[string]string{"X-Forwarded-For": "203.0.113.9", "Authorization": "Bearer nope"}, http.StatusForbidden},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, path := range []string{"/admin/pairing", "/admin/status", "/admin/jobs"} {
				if code, body := adminCall(t, r, http.MethodGet, path, c.hdr); code != c.status {
					t.Errorf("GET %s = %d %q, want %d", path, code, body, c.status)
				}
			}
			want := c.status
			if want == http.StatusOK {
				want = http.StatusNotFound // the code is unknown: the handler ran
			}
			if code, body := adminCall(t, r, http.MethodPost, "/admin/pairing/approve", c.hdr); code != want {
				t.Errorf("POST /admin/pairing/approve = %d %q, want %d", code, body, want)
			}
		})
	}
}

// With a webhook mode on and no admin_token the daemon cannot tell a proxied
// request from a local one (a proxy need not add headers): token-less admin
// access is off, the start-up log says so, and the local token still works.
func TestAdminNeedsTokenInWebhookMode(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	tg := faketelegram.New(t, faketelegram.Options{})
	cfg := telegramConfig(t, llm, tg)
	telegram.ConfigIn(cfg.Channels).Mode = "webhook"
	telegram.ConfigIn(cfg.Channels).WebhookURL = "https://bot.example.com/webhooks/telegram"
	const secret = "hook-secret-0123456789"
	telegram.ConfigIn(cfg.Channels).WebhookSecret = config.NewSecret(secret)
	r := startDaemon(t, cfg, tg.Token(), secret)
	if code, body := adminCall(t, r, http.MethodGet, "/admin/pairing", nil); code != http.StatusUnauthorized {
		t.Errorf("GET /admin/pairing without a token in webhook mode = %d %q, want 401", code, body)
	}
	if code, _ := adminCall(t, r, http.MethodPost, "/admin/pairing/approve", nil); code != http.StatusUnauthorized {
		t.Errorf("POST /admin/pairing/approve without a token in webhook mode = %d, want 401", code)
	}
	auth := map[string]string{"Authorization": "Bearer " + localToken(t, cfg)}
	if code, body := adminCall(t, r, http.MethodGet, "/admin/pairing", auth); code != http.StatusOK {
		t.Errorf("GET /admin/pairing with the local token = %d %q, want 200", code, body)
	}
	log := r.log.String()
	if !strings.Contains(log, "admin endpoints need a token: a webhook mode is on") || !strings.Contains(log, "channels.telegram.mode: webhook") {
		t.Errorf("the start-up log does not say why admin needs a token:\n%s", log)
	}
}

// adminFrom sends GET path with token from the local address src (a
// loopback address other than 127.0.0.1 is another client).
func adminFrom(t *testing.T, r *rig, src, path, token string) (int, http.Header) {
	t.Helper()
	return adminCallFrom(t, r, src, path, map[string]string{"Authorization": "Bearer " + token})
}

// TestAdminTokenGuessesAreLimited: the admin endpoints take the same token
// as the console's login, whose attempts are limited; wrong bearer tokens
// are limited per client address the same way (5 a minute), so the token
// cannot be guessed at network speed through /admin/*. The right token is
// never refused (issue 28's attack: guesses from elsewhere locked the
// operator out), and the scheme is matched in any case.
func TestAdminTokenGuessesAreLimited(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	cfg := baseConfig(t, llm)
	const token = "admin-token-guess-test-0123456789"
	cfg.Server.AdminToken = config.NewSecret(token)
	r := startDaemon(t, cfg, token)
	var codes []int
	for i := range 6 {
		code, _ := adminFrom(t, r, "127.0.0.1", "/admin/status", fmt.Sprintf("guess-%d", i))
		codes = append(codes, code)
	}
	for i, code := range codes[:5] {
		if code != http.StatusUnauthorized {
			t.Errorf("wrong token %d = %d, want 401", i+1, code)
		}
	}
	if codes[5] != http.StatusTooManyRequests {
		t.Errorf("wrong token 6 = %d, want 429", codes[5])
	}
	if code, hdr := adminFrom(t, r, "127.0.0.1", "/admin/status", "guess-7"); code != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" {
		t.Errorf("another wrong token from the guessing address = %d (Retry-After %q), want 429 with Retry-After", code, hdr.Get("Retry-After"))
	}
	if code, _ := adminFrom(t, r, "127.0.0.1", "/admin/status", token); code != http.StatusOK {
		t.Errorf("the right token from the guessing address = %d, want 200: guesses must not lock the operator out", code)
	}
	if code, _ := adminCallFrom(t, r, "127.0.0.1", "/admin/status", map[string]string{"Authorization": "bearer " + token}); code != http.StatusOK {
		t.Errorf("the right token with a lower-case scheme = %d, want 200", code)
	}
	if code, _ := adminFrom(t, r, "127.0.0.2", "/admin/status", token); code != http.StatusOK {
		t.Errorf("the right token from another address = %d, want 200", code)
	}
	// Behind a reverse proxy on the same host every guess arrives from the
	// loopback address the local CLI uses too; proxied requests (they carry
	// the proxy's headers) are limited apart, so guessing through the proxy
	// does not lock out the CLI.
	proxied := map[string]string{"X-Forwarded-For": "203.0.113.9"}
	for i := range 6 {
		proxied["Authorization"] = fmt.Sprintf("Bearer guess-%d", i)
		code, _ := adminCallFrom(t, r, "127.0.0.3", "/admin/status", proxied)
		if want := map[bool]int{true: http.StatusTooManyRequests, false: http.StatusUnauthorized}[i == 5]; code != want {
			t.Errorf("proxied wrong token %d = %d, want %d", i+1, code, want)
		}
	}
	if code, _ := adminFrom(t, r, "127.0.0.3", "/admin/status", token); code != http.StatusOK {
		t.Errorf("the right token straight from the address the proxy guessed from = %d, want 200", code)
	}
}

// adminCallFrom sends GET path with the headers hdr from the local address src.
func adminCallFrom(t *testing.T, r *rig, src, path string, hdr map[string]string) (int, http.Header) {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	client := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, r.url()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}
