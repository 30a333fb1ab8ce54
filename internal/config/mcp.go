package config

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// MCP configures the MCP (Model Context Protocol) client: external tool
// servers whose tools become agent tools named <server>__<tool>.
type MCP struct {
	Servers map[string]MCPServer `yaml:"servers"` // by name
}

// MCPServer is one MCP server: a stdio server (command, args, env, cwd)
// or a Streamable HTTP server (url, headers). env and headers values are
// secrets (redacted everywhere, ${VAR} expanded).
type MCPServer struct {
	Enabled bool              `yaml:"enabled"` // default true
	Command string            `yaml:"command"` // stdio: the program to run
	Args    []string          `yaml:"args"`
	Env     map[string]Secret `yaml:"env"` // added to a minimal environment (PATH, HOME, LANG)
	Cwd     string            `yaml:"cwd"` // relative to the config file
	URL     string            `yaml:"url"` // Streamable HTTP endpoint
	Headers map[string]Secret `yaml:"headers"`
	// Timeout bounds connecting and each call (0 = DefaultMCPTimeout).
	Timeout time.Duration `yaml:"timeout"`
	// Tools is an allowlist of the server's own tool names (globs allowed);
	// empty = every tool the server lists.
	Tools []string `yaml:"tools"`
}

// DefaultMCPTimeout is the connect and call timeout of an MCP server whose
// timeout is 0.
const DefaultMCPTimeout = 30 * time.Second

// MCPToolSep separates the server name from the tool name in the agent's
// name of an MCP tool (github__create_issue).
const MCPToolSep = "__"

// mcpServerRe and maxMCPServerName are the server name rule (the length
// apart: {1,32} compiles to a ~10 KB program).
var mcpServerRe = regexp.MustCompile(`^[a-z0-9-]+$`)

const maxMCPServerName = 32

// EffectiveTimeout returns Timeout, or DefaultMCPTimeout when it is 0.
func (s MCPServer) EffectiveTimeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return DefaultMCPTimeout
}

// ServerNames lists the configured MCP server names, sorted.
func (m MCP) ServerNames() []string {
	out := make([]string, 0, len(m.Servers))
	for n := range m.Servers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// mcpDefaults sets enabled: true on every server that does not say otherwise.
func (c *Config) mcpDefaults() {
	for name, s := range c.MCP.Servers {
		if c.src == nil || !c.src.present["mcp.servers."+name+".enabled"] {
			s.Enabled = true
			c.MCP.Servers[name] = s
		}
	}
}

func (v *validator) mcp() {
	for _, name := range v.c.MCP.ServerNames() {
		s := v.c.MCP.Servers[name]
		key := "mcp.servers." + name
		if len(name) > maxMCPServerName || !mcpServerRe.MatchString(name) {
			v.fail(key, "server name %q must be 1-32 of a-z, 0-9 and - (it prefixes tool names: %s__<tool>)", truncate(name, 60), truncate(name, 32))
			continue
		}
		switch {
		case s.Command == "" && s.URL == "":
			v.fail(key, "set command (a stdio server) or url (a Streamable HTTP server)")
		case s.Command != "" && s.URL != "":
			v.fail(key, "set either command (stdio) or url (Streamable HTTP), not both")
		case s.URL != "":
			v.httpURL(key+".url", s.URL)
			if len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != "" {
				v.fail(key, "args, env and cwd apply only to a stdio server (command)")
			}
		default:
			if len(s.Headers) > 0 {
				v.fail(key+".headers", "apply only to a Streamable HTTP server (url)")
			}
		}
		v.nonNegativeDur(key+".timeout", s.Timeout)
		for i, t := range s.Tools {
			if _, err := path.Match(t, ""); err != nil || t == "" {
				v.fail(fmt.Sprintf("%s.tools[%d]", key, i), "%q is not a valid tool name or glob", truncate(t, 60))
			}
		}
	}
}

// isGlob reports whether s has glob metacharacters.
func isGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

// ToolNameProblem says what is wrong with name as an entry of agent.tools
// or a persona's tools list, or returns "" when it is fine: a built-in
// tool, <server>__<tool> or <server>__<glob> for a configured MCP server,
// or a glob (github__*, web_*, *) that is a valid pattern.
func (c *Config) ToolNameProblem(name string) string {
	known := BuiltinTools()
	if slices.Contains(known, name) {
		return ""
	}
	if server, rest, ok := strings.Cut(name, MCPToolSep); ok {
		if _, configured := c.MCP.Servers[server]; configured && rest != "" {
			if _, err := path.Match(rest, ""); err != nil {
				return fmt.Sprintf("%q is not a valid glob", truncate(name, 60))
			}
			return ""
		}
	}
	if isGlob(name) {
		if _, err := path.Match(name, ""); err != nil {
			return fmt.Sprintf("%q is not a valid glob", truncate(name, 60))
		}
		return ""
	}
	for _, s := range c.MCP.ServerNames() {
		known = append(known, s+MCPToolSep+"*")
	}
	return unknownName("tool", name, known)
}
