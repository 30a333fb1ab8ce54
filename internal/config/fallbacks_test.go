package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

const fallbackSecret = "sk-fallback-DISTINCT-0123456789"

// llm.fallbacks loads with ${ENV} keys, and no rendering of the config
// (config get, show, doctor's map, fmt, JSON) prints a fallback's key or
// the password in its URL.
func TestFallbacksLoadAndStaySecret(t *testing.T) {
	c := mustParse(t, `llm:
  model: gpt-4o-mini
  fallbacks:
    - {base_url: "http://user:urlpass-DISTINCT@10.0.0.2:8080/v1", api_key: "${FB_KEY}", model: llama3.1}
    - model: gpt-4o
`, envOf(map[string]string{"FB_KEY": fallbackSecret}))
	fb := c.LLM.Fallbacks
	if len(fb) != 2 || fb[0].APIKey.Value() != fallbackSecret || fb[0].Model != "llama3.1" || fb[1].Model != "gpt-4o" || fb[1].BaseURL != "" {
		t.Fatalf("fallbacks %+v", fb)
	}
	out := map[string]string{}
	for _, k := range []string{"llm", "llm.fallbacks", "llm.fallbacks[0]", "llm.fallbacks[0].api_key", "llm.fallbacks.0.base_url"} {
		v, err := Get(c, k)
		if err != nil {
			t.Fatalf("get %s: %v", k, err)
		}
		out["get "+k] = v
	}
	y, err := c.RedactedYAML()
	if err != nil {
		t.Fatal(err)
	}
	out["yaml"] = string(y)
	j, _ := json.Marshal(c.Redacted())
	out["redacted map"] = string(j)
	if s := fmt.Sprintf("%v %+v %#v", c.LLM, c.LLM.Fallbacks, c.LLM.Fallbacks[0]); strings.Contains(s, fallbackSecret) {
		t.Errorf("fmt shows the key: %s", s)
	}
	for name, s := range out {
		if strings.Contains(s, fallbackSecret) || strings.Contains(s, "urlpass-DISTINCT") {
			t.Errorf("%s shows a secret:\n%s", name, s)
		}
	}
	if got := out["get llm.fallbacks[0].api_key"]; got != "[redacted]" {
		t.Errorf("get api_key = %q", got)
	}
	if !strings.Contains(out["get llm.fallbacks"], "llama3.1") {
		t.Errorf("get llm.fallbacks = %q", out["get llm.fallbacks"])
	}
	if !IsSecretKey("llm.fallbacks[0].api_key") || !IsSecretKey("llm.fallbacks.1.api_key") {
		t.Error("a fallback's api_key is not a secret key")
	}
}

// A bad fallback is refused with file:line and the key.
func TestFallbacksValidation(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"llm:\n  fallbacks:\n    - {api_key: x}\n", "config.yaml:3: llm.fallbacks[0] needs base_url or model"},
		{"llm:\n  fallbacks:\n    - model: a\n    - base_url: ftp://x/v1\n", "config.yaml:4: llm.fallbacks[1].base_url: "},
		{"llm:\n  model: m\n  fallbacks:\n    - model: m\n", "config.yaml:4: llm.fallbacks[0] is the same endpoint and model as llm"},
		{"llm:\n  fallbacks:\n    - model: a\n    - model: a\n", "config.yaml:4: llm.fallbacks[1] is the same endpoint and model as llm.fallbacks[0]"},
		{"llm:\n  fallbacks:\n    - {model: a, modle: b}\n", "modle"},
	} {
		if got := parseErr(t, tt.yaml, emptyEnv); !strings.Contains(got, tt.want) {
			t.Errorf("%q:\n got %s\nwant %s", tt.yaml, got, tt.want)
		}
	}
}
