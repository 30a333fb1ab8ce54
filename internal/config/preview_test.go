package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestPlaintextSecrets(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"env references only", "llm:\n  api_key: ${OPENAI_API_KEY}\nserver:\n  admin_token: ${T}\n", nil},
		{"literal key", "llm:\n  api_key: sk-abc\n", []string{"line 2: llm.api_key"}},
		{"url with password", "llm:\n  base_url: http://u:pw@h/v1\n", []string{"line 2: llm.base_url"}},
		{"url without credentials", "llm:\n  base_url: http://h/v1\n", nil},
		{"mcp env and headers", "mcp:\n  servers:\n    gh:\n      url: http://h/mcp\n      headers: {Authorization: Bearer x}\n",
			[]string{"line 5: mcp.servers.gh.headers.Authorization"}},
		{"empty secret", "channels:\n  telegram:\n    token: \"\"\n", nil},
		{"secret as a default", "llm:\n  api_key: ${OPENAI_API_KEY:-sk-abc}\n", []string{"line 2: llm.api_key"}},
		{"empty default", "llm:\n  api_key: ${OPENAI_API_KEY:-}\n", nil},
		{"reference in a header", "mcp:\n  servers:\n    f:\n      headers: {Authorization: Bearer ${T}}\n", nil},
		{"url default with a password", "llm:\n  base_url: http://u:${PASS:-pw}@h/v1\n", []string{"line 2: llm.base_url"}},
		{"url default without credentials", "llm:\n  base_url: ${OPENAI_BASE_URL:-http://127.0.0.1:11434/v1}\n", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := PlaintextSecrets([]byte(tc.yaml)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("= %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPlaintextSecretLines(t *testing.T) {
	data := "llm:\n  api_key: |\n    sk-line-one\n    sk-line-two\n  model: m\nchannels:\n  discord: {enabled: true, token: t0k}\n" +
		"  slack:\n    bot_token: ${SLACK_BOT_TOKEN}\n"
	want := map[int]bool{2: true, 3: false, 4: false, 7: true}
	if got := PlaintextSecretLines([]byte(data)); !reflect.DeepEqual(got, want) {
		t.Errorf("= %v, want %v", got, want)
	}
	for _, tc := range []struct {
		key, value string
		want       bool
	}{
		{"channels.discord", "{enabled: true, token: t0k}", true},
		{"channels.discord", `{enabled: true, token: "${DISCORD_BOT_TOKEN}"}`, false},
		{"llm", "{base_url: 'http://u:pw@h/v1'}", true},
		{"llm", "{model: m, temperature: 0.2}", false},
		{"mcp.servers.gh", "{command: npx, env: {GITHUB_TOKEN: ghp}}", true},
		{"llm.model", "m", false},
		{"llm", "{api_key: sk, model: [", true}, // not YAML: cannot be checked
	} {
		if got := ValueHoldsSecret(tc.key, tc.value); got != tc.want {
			t.Errorf("ValueHoldsSecret(%s, %s) = %v, want %v", tc.key, tc.value, got, tc.want)
		}
	}
}

func TestReplaceFileValidatesBeforeWriting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	orig := []byte("# keep\nllm:\n  model: a\n")
	if err := os.WriteFile(path, orig, 0o640); err != nil {
		t.Fatal(err)
	}
	err := ReplaceFile(path, []byte("llm:\n  modle: b\n"), nil)
	if err == nil || !strings.Contains(err.Error(), path+":2") {
		t.Fatalf("an unknown key: %v, want file:line", err)
	}
	if err := ReplaceFile(path, []byte("llm:\n  model: b\n"), []byte("something else")); err == nil {
		t.Fatal("a file changed since it was read was overwritten")
	}
	if data, _ := os.ReadFile(path); string(data) != string(orig) {
		t.Fatalf("the file changed: %q", data)
	}
	if err := ReplaceFile(path, []byte("# keep\nllm:\n  model: b\n"), orig); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if data, _ := os.ReadFile(path); string(data) != "# keep\nllm:\n  model: b\n" || st.Mode().Perm() != 0o640 {
		t.Errorf("after the write: %q %v", data, st.Mode().Perm())
	}
	before, after, cfg, err := SetPreview(path, "llm.model", "c")
	if err != nil || cfg.LLM.Model != "c" || !strings.Contains(string(after), "model: c") || !strings.Contains(string(after), "# keep") {
		t.Fatalf("preview: %v %q", err, after)
	}
	if data, _ := os.ReadFile(path); string(data) != string(before) {
		t.Error("the preview wrote the file")
	}
}
