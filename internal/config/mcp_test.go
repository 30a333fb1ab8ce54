package config

import (
	"strings"
	"testing"
	"time"
)

// Issue 16: mcp.servers — stdio and Streamable HTTP servers, env and
// headers as ${VAR} secrets never shown, enabled by default, and
// agent.tools accepting globs and <server>__ names of configured servers.
func TestMCPConfig(t *testing.T) {
	const tok = "ghp-mcp-config-secret-42"
	env := envOf(map[string]string{"GITHUB_TOKEN": tok})
	const servers = "mcp:\n  servers:\n    github:\n      command: npx\n      args: [-y, server-github]\n      env:\n        GITHUB_TOKEN: ${GITHUB_TOKEN}\n" +
		"    remote:\n      url: https://mcp.example/mcp\n      headers:\n        Authorization: Bearer ${GITHUB_TOKEN}\n      enabled: false\n      timeout: 5s\n      tools: [\"get_*\"]\n"
	for _, tt := range []struct {
		name, yaml string
		want       string // "" = valid
	}{
		{"servers and globs", "agent:\n  tools: [current_time, \"github__*\", remote__get_file, \"web_*\"]\n" + servers, ""},
		{"tool of an unknown server", "agent:\n  tools: [gitlab__x]\n" + servers, `agent.tools[0]: unknown tool "gitlab__x"`},
		{"unknown tool lists server globs", "agent:\n  tools: [githb]\n" + servers, `github__*`},
		{"bad glob", "agent:\n  tools: [\"github__[\"]\n" + servers, `not a valid glob`},
		{"neither command nor url", "mcp:\n  servers:\n    x:\n      args: [a]\n", "mcp.servers.x: set command"},
		{"both", "mcp:\n  servers:\n    x:\n      command: a\n      url: http://h/mcp\n", "not both"},
		{"headers on stdio", "mcp:\n  servers:\n    x:\n      command: a\n      headers:\n        A: b\n", "apply only to a Streamable HTTP server"},
		{"env on http", "mcp:\n  servers:\n    x:\n      url: http://h/mcp\n      env:\n        A: b\n", "apply only to a stdio server"},
		{"bad url", "mcp:\n  servers:\n    x:\n      url: ftp://h/mcp\n", "mcp.servers.x.url"},
		{"bad name", "mcp:\n  servers:\n    My_Server:\n      command: a\n", "server name \"My_Server\""},
		{"negative timeout", "mcp:\n  servers:\n    x:\n      command: a\n      timeout: -1s\n", "mcp.servers.x.timeout"},
		{"unknown key", "mcp:\n  servers:\n    x:\n      comand: a\n", `unknown key "comand"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("config.yaml", []byte(tt.yaml), env)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), tok) {
				t.Fatalf("the token is in the error: %v", err)
			}
			if c != nil {
				if y, _ := c.RedactedYAML(); strings.Contains(string(y), tok) {
					t.Fatalf("RedactedYAML shows the token:\n%s", y)
				}
			}
		})
	}
	c := mustParse(t, servers, env)
	gh, remote := c.MCP.Servers["github"], c.MCP.Servers["remote"]
	if !gh.Enabled || remote.Enabled || gh.Env["GITHUB_TOKEN"].Value() != tok || remote.Headers["Authorization"].Value() != "Bearer "+tok {
		t.Fatalf("decoded %+v %+v", gh, remote)
	}
	if gh.EffectiveTimeout() != DefaultMCPTimeout || remote.EffectiveTimeout() != 5*time.Second {
		t.Fatal("timeouts")
	}
}
