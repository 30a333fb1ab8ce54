package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// SecretValues finds the secrets of every part of the schema: the model's
// key and its fallbacks', the admin token, the database URL, a platform's
// section, MCP env and headers — and nothing that is not a secret.
func TestSecretValues(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	text := `llm:
  api_key: sk-primary-0001
  fallbacks:
    - {base_url: "http://127.0.0.1:1/v1", api_key: sk-fallback-0002, model: m}
server:
  admin_token: admin-tok-0003
storage:
  postgres: {url: "postgres://sb:pg-pass-0004@127.0.0.1/db"}
channels:
  telegram: {enabled: false, token: "123:tg-token-0005"}
mcp:
  servers:
    kg: {command: kg, env: {KG_KEY: kg-env-0006}}
    web: {url: "http://127.0.0.1:9/mcp", headers: {Authorization: "Bearer hdr-0007"}}
`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.SecretValues()
	for _, want := range []string{"sk-primary-0001", "sk-fallback-0002", "admin-tok-0003", "postgres://sb:pg-pass-0004@127.0.0.1/db",
		"123:tg-token-0005", "kg-env-0006", "Bearer hdr-0007"} {
		if !slices.Contains(got, want) {
			t.Errorf("SecretValues() = %q lacks %q", got, want)
		}
	}
	for _, not := range []string{"m", "kg", "http://127.0.0.1:1/v1", ""} {
		if slices.Contains(got, not) {
			t.Errorf("SecretValues() holds %q, not a secret", not)
		}
	}
	for i := 1; i < len(got); i++ {
		if len(got[i]) > len(got[i-1]) {
			t.Errorf("not longest first: %q", got)
		}
	}
}
