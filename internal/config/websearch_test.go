package config

import (
	"strings"
	"testing"
)

// Issue 16: agent.web_search and skills.dir are validated with file:line;
// the Brave key defaults to ${BRAVE_API_KEY}, is a Secret and never shown.
func TestWebSearchAndSkillsConfig(t *testing.T) {
	const key = "BSA-config-secret-77"
	env := envOf(map[string]string{"BRAVE_API_KEY": key})
	for _, tt := range []struct {
		name, yaml string
		env        EnvFunc
		want       string // "" = valid
	}{
		{"off by default", "agent:\n  web_search:\n    provider: brave\n", emptyEnv, ""},
		{"brave with env key", "agent:\n  tools: [web_search]\n  web_search:\n    provider: brave\n", env, ""},
		{"searxng", "agent:\n  tools: [web_search]\n  web_search:\n    provider: searxng\n    url: http://127.0.0.1:8888\n    max_results: 20\n", emptyEnv, ""},
		{"no provider", "agent:\n  tools: [web_search]\n", emptyEnv,
			"config.yaml:1: agent.web_search.provider is empty but agent.tools enables web_search: set brave or searxng"},
		{"brave without key", "agent:\n  tools: [web_search]\n  web_search:\n    provider: brave\n", emptyEnv,
			"config.yaml:3: agent.web_search.api_key is empty but web_search uses brave: set BRAVE_API_KEY"},
		{"searxng without url", "agent:\n  tools: [web_search]\n  web_search:\n    provider: searxng\n", emptyEnv,
			"config.yaml:3: agent.web_search.url is empty but web_search uses searxng"},
		{"unknown provider", "agent:\n  web_search:\n    provider: google\n", emptyEnv,
			`config.yaml:3: agent.web_search.provider: must be brave or searxng (or empty when web_search is not used), got "google"`},
		{"too many results", "agent:\n  web_search:\n    max_results: 21\n", emptyEnv,
			"config.yaml:3: agent.web_search.max_results: must be between 1 and 20, got 21"},
		{"bad url", "agent:\n  web_search:\n    url: ftp://search.example\n", emptyEnv, "config.yaml:3: agent.web_search.url"},
		{"key in the url key", "agent:\n  web_search:\n    url: ${BRAVE_API_KEY}\n", env, "config.yaml:3: agent.web_search.url"},
		{"empty skills dir", "skills:\n  dir: \"\"\n", emptyEnv, "config.yaml:2: skills.dir: must not be empty"},
		{"unknown skills key", "skills:\n  dirr: ./s\n", emptyEnv, `unknown key "dirr" in skills (did you mean "dir"?)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("config.yaml", []byte(tt.yaml), tt.env)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), key) {
				t.Fatalf("the key is in the error: %v", err)
			}
			if c != nil {
				y, _ := c.RedactedYAML()
				if strings.Contains(string(y), key) {
					t.Fatalf("RedactedYAML shows the key:\n%s", y)
				}
			}
		})
	}
	c := mustParse(t, "agent:\n  tools: [web_search]\n  web_search:\n    provider: brave\n", env)
	if c.Agent.WebSearch.APIKey.Value() != key || !IsSecretKey("agent.web_search.api_key") {
		t.Fatal("the key is not read from BRAVE_API_KEY as a secret")
	}
}
