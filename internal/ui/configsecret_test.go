package ui_test

import (
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
)

// TestConfigKeyEditNeverShowsASecret: the key editor's preview (its diff and
// the value field shown again) and its refusals never show a secret written
// in plain text, also when the key is not itself a secret: a section set
// whole ({token: …}), a key whose line in the file also holds a secret (a
// flow mapping), a section whose old text held one.
func TestConfigKeyEditNeverShowsASecret(t *testing.T) {
	const (
		secret1 = "discord-plain-secret-0123456789"
		secret2 = "sk-refused-plain-secret-0123456789"
	)
	r := startConsole(t, cOptions{})
	c := newClient(t, r.base)
	c.login(cAdminToken)
	noSecret := func(what string, got resp, wantCode int, secrets ...string) {
		t.Helper()
		if got.Code != wantCode {
			t.Errorf("%s = %d, want %d:\n%s", what, got.Code, wantCode, got.Body)
		}
		for _, s := range secrets {
			for _, line := range strings.Split(got.Body, "\n") {
				if strings.Contains(line, s) {
					t.Errorf("%s shows the secret: %s", what, strings.TrimSpace(line))
				}
			}
		}
	}
	section := url.Values{"key": {"channels.discord"}, "value": {"{enabled: false, token: " + secret1 + "}"}}
	section.Set("action", "preview")
	noSecret("preview of a section with a token", c.post("/ui/config/key", section), http.StatusOK, secret1)
	section.Set("action", "apply")
	if got := c.post("/ui/config/key", section); got.Code != http.StatusSeeOther {
		t.Fatalf("apply = %d:\n%s", got.Code, got.Body)
	}
	if data, _ := os.ReadFile(r.path); !strings.Contains(string(data), secret1) {
		t.Fatalf("the section was not written:\n%s", data)
	}
	// The file now holds the token on the line of channels.discord.
	noSecret("preview of a key on the token's line", c.post("/ui/config/key", url.Values{"key": {"channels.discord.api_url"},
		"value": {"http://127.0.0.1:9"}, "action": {"preview"}}), http.StatusOK, secret1)
	noSecret("preview replacing the section", c.post("/ui/config/key", url.Values{"key": {"channels.discord"},
		"value": {"{enabled: false}"}, "action": {"preview"}}), http.StatusOK, secret1)
	noSecret("a refused section with a key", c.post("/ui/config/key", url.Values{"key": {"llm"},
		"value": {"{api_key: " + secret2 + ", modle: x}"}, "action": {"preview"}}), http.StatusUnprocessableEntity, secret2)
	noSecret("the audit log", c.get("/ui/audit"), http.StatusOK, secret1, secret2)
}

// TestConfigFileWithASecretDefaultIsNotShownWhole: a secret written as the
// default of an environment reference (${OPENAI_API_KEY:-sk-…}, the form the
// shipped config.yaml documents) is a secret in plain text: the config page
// names it and does not show the file whole.
func TestConfigFileWithASecretDefaultIsNotShownWhole(t *testing.T) {
	const secret = "sk-default-in-the-file-0123456789"
	r := startConsole(t, cOptions{})
	data, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "api_key: ${SB_CONSOLE_LLM_KEY}", "api_key: ${SB_CONSOLE_NO_SUCH_KEY:-"+secret+"}", 1)
	if err := os.WriteFile(r.path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, r.base)
	c.login(cAdminToken)
	page := c.get("/ui/config")
	if page.Code != http.StatusOK || strings.Contains(page.Body, secret) || strings.Contains(page.Body, `id="config-text"`) {
		t.Errorf("/ui/config = %d and shows the file whole (secret shown: %v)", page.Code, strings.Contains(page.Body, secret))
	}
	if !strings.Contains(page.Body, "llm.api_key") {
		t.Error("the config page does not name the key written in plain text")
	}
}
