package agent

import "strings"

// sectionMaxChars bounds one tool's section of the system prompt.
const sectionMaxChars = 8000

// PromptSection is implemented by tools that add a section to the stable
// system prompt when they are offered (the skill tool lists the available
// skills there). The section must depend only on the persona and the tool's
// own state, so the prompt stays byte-identical across turns while that
// state does not change. "" adds nothing. A section is cut at 8000
// characters with a visible notice.
type PromptSection interface {
	PromptSection(p Persona) string
}

// Availability is implemented by tools that are offered only in some turns:
// Available reports whether the tool has anything to offer to persona p
// (the skill tool is left out when p has no skills).
type Availability interface {
	Available(p Persona) bool
}

// available drops the tools that report they have nothing to offer to p.
func available(tools []Tool, p Persona) []Tool {
	out := tools[:0:0]
	for _, t := range tools {
		if av, ok := t.(Availability); ok && !av.Available(p) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// toolSections renders the PromptSection of every offered tool that has one,
// in the tools' order, each bounded.
func toolSections(p Persona, tools []Tool) string {
	var sb strings.Builder
	for _, t := range tools {
		ps, ok := t.(PromptSection)
		if !ok {
			continue
		}
		sec := strings.TrimSpace(ps.PromptSection(p))
		if sec == "" {
			continue
		}
		sb.WriteString("\n")
		sb.WriteString(boundText(sec, sectionMaxChars, t.Name()+" section"))
		sb.WriteString("\n")
	}
	return sb.String()
}
