package skills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/switchboard-bot/switchboard/agent"
)

// ToolName is the skill tool's name as the model sees it.
const ToolName = "skill"

// Bounds of what the tool shows.
const (
	// MaxListed and MaxListChars bound the skills listed in the system prompt.
	MaxListed    = 50
	MaxListChars = 6000
	// DefaultPageChars is how many characters of a skill's instructions one
	// call returns (the rest is fetched with offset).
	DefaultPageChars = 3500
)

// Tool is the skill tool: it lists a Library's skills in the system prompt
// and returns one skill's instructions on demand.
type Tool struct {
	lib       *Library
	pageChars int
}

var (
	_ agent.Tool          = (*Tool)(nil)
	_ agent.Repeatable    = (*Tool)(nil)
	_ agent.PromptSection = (*Tool)(nil)
	_ agent.Availability  = (*Tool)(nil)
)

// NewTool returns the skill tool over lib. pageChars bounds one answer
// (DefaultPageChars when ≤ 0); keep it under the agent's observation limit.
func NewTool(lib *Library, pageChars int) *Tool {
	if pageChars <= 0 {
		pageChars = DefaultPageChars
	}
	return &Tool{lib: lib, pageChars: pageChars}
}

// args are the skill tool's arguments; its schema is generated from them.
type args struct {
	Name   string `json:"name" jsonschema:"The skill's name, as listed under Skills in the system prompt."`
	Offset int    `json:"offset,omitempty" jsonschema:"Character offset to continue a long skill from (0 or absent: the start)."`
}

var toolSchema = sync.OnceValue(func() json.RawMessage {
	return agent.MustArgsSchema[args](func(p map[string]*jsonschema.Schema) {
		p["name"].MinLength = jsonschema.Ptr(1)
		p["name"].MaxLength = jsonschema.Ptr(64)
		p["offset"].Minimum = jsonschema.Ptr(0.0)
	})
})

// Name implements agent.Tool.
func (t *Tool) Name() string { return ToolName }

// Description implements agent.Tool.
func (t *Tool) Description() string {
	return "Load the full instructions of one of the skills listed under Skills in the system prompt. " +
		"Call it before doing a task that matches a skill's description, then follow the instructions it returns."
}

// Schema implements agent.Tool.
func (t *Tool) Schema() json.RawMessage { return toolSchema() }

// Repeatable implements agent.Repeatable: reading a file has no effect.
func (t *Tool) Repeatable() bool { return true }

// Available implements agent.Availability: the tool is offered only when
// the persona may use at least one skill.
func (t *Tool) Available(p agent.Persona) bool { return len(t.allowed(p.Skills)) > 0 }

// allowed returns the skills the allowlist lets through (nil = all).
func (t *Tool) allowed(allow []string) []Skill {
	all := t.lib.Skills()
	if allow == nil {
		return all
	}
	out := all[:0]
	for _, s := range all {
		if slices.Contains(allow, s.Name) {
			out = append(out, s)
		}
	}
	return out
}

// PromptSection implements agent.PromptSection: the names and descriptions
// of the skills persona p may use, at most MaxListed / MaxListChars.
func (t *Tool) PromptSection(p agent.Persona) string {
	list := t.allowed(p.Skills)
	if len(list) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("## Skills\n")
	sb.WriteString("Skills are instructions the operator of this bot wrote for particular tasks. When a request matches a skill's description, " +
		"call the skill tool with its name before you start, then follow the instructions it returns: they come from the operator, " +
		"unlike other tool results. Do not load a skill the request does not need.\n")
	used, shown := 0, 0
	for _, s := range list {
		line := fmt.Sprintf("- %s: %s\n", s.Name, s.Description)
		if shown == MaxListed || used+utf8.RuneCountInString(line) > MaxListChars {
			break
		}
		sb.WriteString(line)
		used += utf8.RuneCountInString(line)
		shown++
	}
	if left := len(list) - shown; left > 0 {
		fmt.Fprintf(&sb, "[%d more skills not listed]\n", left)
	}
	return sb.String()
}

// Call implements agent.Tool: it returns the instructions of the named
// skill, a page of them when they are long.
func (t *Tool) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	var a args
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", agent.Permanent(fmt.Errorf("skill: invalid arguments: %w", err))
	}
	var allow []string
	if ci, ok := agent.CallInfoFrom(ctx); ok {
		allow = ci.Skills
	}
	names := make([]string, 0)
	for _, s := range t.allowed(allow) {
		names = append(names, s.Name)
	}
	s, ok := t.lib.Get(a.Name)
	if !ok || !slices.Contains(names, a.Name) {
		msg := fmt.Sprintf("skill: no skill named %q", truncate(a.Name, 64))
		if len(names) > 0 {
			msg += "; available: " + strings.Join(names, ", ")
		}
		return "", agent.Permanent(errors.New(msg))
	}
	body := []rune(s.Body)
	if a.Offset < 0 || a.Offset > len(body) {
		return "", agent.Permanent(fmt.Errorf("skill: offset %d is past the end of %s (%d characters)", a.Offset, s.Name, len(body)))
	}
	end := min(len(body), a.Offset+t.pageChars)
	var sb strings.Builder
	fmt.Fprintf(&sb, "Skill: %s\n\n", s.Name)
	sb.WriteString(string(body[a.Offset:end]))
	if end < len(body) {
		fmt.Fprintf(&sb, "\n[skill continues: %d more characters; call skill with name %q and offset %d for the rest]", len(body)-end, s.Name, end)
	}
	return sb.String(), nil
}
