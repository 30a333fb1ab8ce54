package daemon_test

import (
	"bufio"
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

// Issue 14 item 2: the admin API behind the CLI's sessions, audit, prompt,
// ask and chat: every endpoint needs the admin token when one is set, and
// answers the operator's mistakes with 400 and a plain sentence.
func TestAdminAPIEndpoints(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	cfg := baseConfig(t, llm)
	const token = "admin-token-for-the-test-4242"
	cfg.Server.AdminToken = config.NewSecret(token)
	r := startDaemon(t, cfg, token)

	do := func(method, path string, form url.Values, auth bool) (int, string) {
		t.Helper()
		var body io.Reader
		target := r.url() + path
		if method == http.MethodGet {
			target += "?" + form.Encode()
		} else {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequest(method, target, body)
		if err != nil {
			t.Fatal(err)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}

	endpoints := []struct {
		method, path string
		form         url.Values
	}{
		{http.MethodGet, "/admin/sessions", nil},
		{http.MethodGet, "/admin/sessions/show", url.Values{"key": {"cli:ask"}}},
		{http.MethodGet, "/admin/sessions/export", url.Values{"key": {"cli:ask"}}},
		{http.MethodPost, "/admin/sessions/reset", url.Values{"key": {"cli:ask"}}},
		{http.MethodGet, "/admin/audit", nil},
		{http.MethodGet, "/admin/prompt", url.Values{"target": {"telegram:42"}}},
		{http.MethodPost, "/admin/ask", url.Values{"session": {"cli:ask"}, "text": {"hi"}}},
		{http.MethodPost, "/admin/chat", url.Values{"text": {"hi"}}},
	}
	for _, e := range endpoints {
		if code, _ := do(e.method, e.path, e.form, false); code != http.StatusUnauthorized {
			t.Errorf("%s %s without the token: %d, want 401", e.method, e.path, code)
		}
	}
	if n := llm.RequestCount(); n != 0 {
		t.Fatalf("unauthorized requests reached the model %d times", n)
	}

	code, body := do(http.MethodPost, "/admin/ask", url.Values{"session": {"cli:ask"}, "text": {"hello"}}, true)
	if code != 200 || !strings.Contains(body, `"echo: hello"`) {
		t.Fatalf("ask: %d %s", code, body)
	}
	for _, tt := range []struct {
		name string
		form url.Values
		want string
	}{
		{"empty question", url.Values{"session": {"cli:ask"}, "text": {"  "}}, "nothing to ask"},
		{"unknown persona", url.Values{"session": {"cli:ask"}, "text": {"hi"}, "persona": {"ghost"}}, `no persona "ghost"`},
		{"empty session", url.Values{"text": {"hi"}}, "session key is empty"},
	} {
		code, body := do(http.MethodPost, "/admin/ask", tt.form, true)
		if code != http.StatusBadRequest || !strings.Contains(body, tt.want) {
			t.Errorf("ask with %s: %d %q", tt.name, code, body)
		}
	}

	// chat: one line into console:local, the answer streamed back as NDJSON.
	code, body = do(http.MethodPost, "/admin/chat", url.Values{"text": {"hi there"}}, true)
	if code != 200 {
		t.Fatalf("chat: %d %s", code, body)
	}
	var text strings.Builder
	done := false
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		var ev daemon.ChatEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("chat event %q: %v", sc.Text(), err)
		}
		text.WriteString(ev.Delta + ev.Text)
		done = done || ev.Done
	}
	if !done || !strings.Contains(text.String(), "echo: hi there") {
		t.Fatalf("chat answer: %s", body)
	}

	code, body = do(http.MethodGet, "/admin/sessions", nil, true)
	if code != 200 || !strings.Contains(body, `"cli:ask"`) || !strings.Contains(body, `"console:local"`) {
		t.Fatalf("sessions: %d %s", code, body)
	}
	code, body = do(http.MethodGet, "/admin/sessions/show", url.Values{"key": {"nosuch"}}, true)
	if code != http.StatusBadRequest || !strings.Contains(body, `no session "nosuch"`) {
		t.Fatalf("show of an unknown session: %d %s", code, body)
	}
	code, body = do(http.MethodPost, "/admin/sessions/reset", url.Values{"key": {"cli:ask"}}, true)
	if code != 200 {
		t.Fatalf("reset: %d %s", code, body)
	}
	code, body = do(http.MethodGet, "/admin/audit", url.Values{"session": {"cli:ask"}}, true)
	if code != 200 || !strings.Contains(body, `"session.reset"`) {
		t.Fatalf("audit after a reset: %d %s", code, body)
	}
	code, body = do(http.MethodGet, "/admin/audit", url.Values{"since": {"yesterday"}}, true)
	if code != http.StatusBadRequest {
		t.Fatalf("audit with a bad since: %d %s", code, body)
	}
	code, body = do(http.MethodGet, "/admin/prompt", url.Values{"target": {"nonsense"}}, true)
	if code != http.StatusBadRequest || !strings.Contains(body, "not a chat address") {
		t.Fatalf("prompt with a bad target: %d %s", code, body)
	}
}
