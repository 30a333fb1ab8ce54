package main

// Issue B1, on the built binary: strangers' wrong admin tokens, from other
// addresses or through a proxy on this host, do not lock `switchboard
// console` out; and a console refused by a rate limit is a runtime failure
// (exit 1), not a usage mistake.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// guessFrom posts a wrong admin token to /ui/login/link from the loopback
// address ip, with hdr; it returns the status.
func guessFrom(t *testing.T, base, ip string, hdr http.Header) int {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: d.DialContext}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodPost, base+"/ui/login/link", nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer wrong-guess")
	resp, err := (&http.Client{Transport: tr, Timeout: waitHang}).Do(req)
	if err != nil {
		t.Fatalf("guess from %s: %v", ip, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestBinaryConsoleNotLockedOutByGuesses(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	addr := freePort(t)
	cfg := consConfig(t, llm.URL, addr, "")
	env := cleanEnv("SB_E2E_KEY=" + e2eKey)
	ctx, cancel := context.WithTimeout(context.Background(), waitHang)
	defer cancel()
	startConsDaemon(ctx, t, cfg, env)
	base := "http://" + addr

	// Through a proxy on this host: every stranger arrives from 127.0.0.1.
	limited := false
	for i := range 8 {
		hdr := http.Header{"X-Forwarded-For": {fmt.Sprintf("203.0.113.%d", i+1)}}
		if guessFrom(t, base, "127.0.0.1", hdr) == http.StatusTooManyRequests {
			limited = true
		}
	}
	// From other addresses, enough to pass the overall cap of 30 a minute.
	for h := 2; h <= 9; h++ {
		for range 6 {
			if guessFrom(t, base, fmt.Sprintf("127.0.0.%d", h), nil) == http.StatusTooManyRequests {
				limited = true
			}
		}
	}
	if !limited {
		t.Fatal("no wrong guess was ever limited (429)")
	}
	r := runBin(t, env, "--config", cfg, "console")
	if r.code != 0 || !linkRE.MatchString(r.stdout) {
		t.Fatalf("console after strangers' wrong tokens: exit %d, want a link\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// A daemon that answers 429 (its limit, whatever the reason) makes
// `switchboard console` fail at run time: exit 1 with the daemon's words.
func TestBinaryConsoleRateLimitedIsARuntimeFailure(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "60")
		http.Error(w, "too many wrong admin tokens from this address: wait a minute and try again", http.StatusTooManyRequests)
	}))
	defer srv.Close()
	cfg := writeConfig(t, fmt.Sprintf("bot:\n  data_dir: ./data\nserver:\n  listen: %s\n  admin_token: some-admin-token-0123456789\n",
		strings.TrimPrefix(srv.URL, "http://")))
	r := runBin(t, cleanEnv(), "--config", cfg, "console")
	if r.code != exitFailure || !strings.Contains(r.stderr, "too many wrong admin tokens") {
		t.Errorf("console refused by a rate limit: exit %d, want 1 with the daemon's reason\n%s", r.code, r.stderr)
	}
}
