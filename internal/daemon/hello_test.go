package daemon_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// The daemon answers a nonce with the proof keyed by its local admin token,
// without a token and whatever server.admin_token is; a malformed nonce is
// refused. The answer names neither token.
func TestHelloProvesTheLocalToken(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	cfg := baseConfig(t, llm)
	const configured = "short-operator-tok"
	cfg.Server.AdminToken = config.NewSecret(configured)
	r := startDaemon(t, cfg, configured)
	local := localToken(t, cfg)

	post := func(form url.Values) (int, string) {
		t.Helper()
		resp, err := http.PostForm(r.url()+daemon.HelloPath, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}
	nonce := make([]byte, daemon.HelloNonceLen)
	if _, err := rand.Read(nonce); err != nil {
		t.Fatal(err)
	}
	code, body := post(url.Values{"nonce": {hex.EncodeToString(nonce)}})
	var ans struct{ Proof string }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &ans) != nil {
		t.Fatalf("hello: %d %q", code, body)
	}
	if ans.Proof != daemon.HelloProof(local, nonce) {
		t.Errorf("proof %q is not the local token's", ans.Proof)
	}
	if ans.Proof == daemon.HelloProof(configured, nonce) || strings.Contains(body, local) || strings.Contains(body, configured) {
		t.Errorf("the answer uses or shows a token it must not: %q", body)
	}
	other := append([]byte(nil), nonce...)
	other[0] ^= 1
	if daemon.HelloProof(local, other) == ans.Proof {
		t.Error("two nonces, one proof")
	}

	for _, bad := range []url.Values{
		{},
		{"nonce": {"abc"}},
		{"nonce": {strings.Repeat("zz", daemon.HelloNonceLen)}},
		{"nonce": {hex.EncodeToString(append(nonce, 1))}},
	} {
		if code, body := post(bad); code != http.StatusBadRequest || !strings.Contains(body, "nonce: want 64 hex digits") {
			t.Errorf("nonce %q: %d %q, want 400", bad.Get("nonce"), code, body)
		}
	}
	if resp, err := http.Get(r.url() + daemon.HelloPath); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %v %v, want 405", resp, err)
	} else {
		resp.Body.Close()
	}
}
