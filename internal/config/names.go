package config

import (
	"fmt"
	"strings"

	"github.com/switchboard-bot/switchboard/internal/platforms"
)

// BuiltinTools returns the names of the built-in tools, the names
// agent.tools and a persona's tools list may use. (agent/tools and
// heartbeat define them; a test in internal/daemon keeps the two in step.)
func BuiltinTools() []string {
	return []string{"current_time", "delete_file", "edit_file", "exec", "list_files", "memory", "read_file", "schedule",
		"send_file", "send_message", "skill", "spawn", "web_fetch", "web_search", "write_file"}
}

// IsSecretKey reports whether key (a dotted path such as "llm.api_key")
// holds a secret.
func IsSecretKey(key string) bool {
	_, leaf, err := schemaPath(key)
	return err == nil && leaf == secretType
}

// Suggest returns the candidate closest to s when it is close enough to be
// a likely typo, else "".
func Suggest(s string, candidates []string) string { return suggest(s, candidates) }

// ErrorAt returns an *Error about key placed at the line where key (or its
// nearest ancestor) was written in the file c was loaded from. The message
// starts with the key, as validation errors do, and shows a value that came
// from the environment as the reference written in the file ("${VAR}"),
// never the variable's value (see scrubKey).
func (c *Config) ErrorAt(key, format string, args ...any) *Error {
	return &Error{File: displayName(c.Path), Line: c.src.line(key), Key: key,
		Msg: joinMsg(key, c.scrubKey(key, fmt.Sprintf(format, args...)))}
}

// unknownName describes a name that is not among known, with "did you mean"
// when one is close.
func unknownName(what, name string, known []string) string {
	msg := fmt.Sprintf("unknown %s %q", what, truncate(name, 60))
	if s := suggest(name, known); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg + "; known: " + strings.Join(known, ", ")
}

// UnknownName is unknownName for other packages (persona names, tools in a
// persona file): `unknown persona "x" (did you mean "y"?); known: a, b`.
func UnknownName(what, name string, known []string) string { return unknownName(what, name, known) }

func (v *validator) tools(key string, list []string) {
	for i, t := range list {
		if msg := v.c.ToolNameProblem(t); msg != "" && (nameRe.MatchString(t) || isGlob(t) || strings.Contains(t, MCPToolSep)) {
			v.fail(fmt.Sprintf("%s[%d]", key, i), "%s", msg)
		}
	}
}

// EnvVarFor returns the environment variable a key defaults to
// (llm.api_key → OPENAI_API_KEY), or "" when it has none.
func EnvVarFor(key string) string { return envDefaultFor(platforms.Builtin, key) }

// toolGlobs checks a list of tool names or globs used by the approval rules
// (agent.require_approval, jobs[].approve): no empty entry, every glob valid,
// every name a known tool (a typo would silently match nothing).
func (v *validator) toolGlobs(key string, list []string) {
	for i, t := range list {
		k := fmt.Sprintf("%s[%d]", key, i)
		switch {
		case strings.TrimSpace(t) == "":
			v.fail(k, "is empty: list a tool name or a glob such as github__delete_*")
		case !nameRe.MatchString(t) && !isGlob(t) && !strings.Contains(t, MCPToolSep):
			v.fail(k, "tool name %q must use only a-z, 0-9, _ and - (or be a glob such as github__*)", truncate(t, 60))
		}
	}
	v.tools(key, list)
}
