package agent

import (
	"context"
	"strings"
	"testing"
)

// sectionTool is a tool with a prompt section that depends on the persona
// and is offered only to personas with skills.
type sectionTool struct {
	funcTool
	section string
}

func (s *sectionTool) PromptSection(p Persona) string {
	return strings.ReplaceAll(s.section, "PERSONA", p.Name)
}
func (s *sectionTool) Available(p Persona) bool { return len(p.Skills) > 0 }

type personaList []Persona

func (l personaList) Persona(name string) (Persona, bool) {
	for _, p := range l {
		if p.Name == name || (name == "" && p.Name == "assistant") {
			return p, true
		}
	}
	return Persona{}, false
}

// Issue 16: a tool's PromptSection goes into the stable system prompt after
// the tool-use (and memory) sections and before the safety rules, bounded;
// a tool whose Available says no is neither offered nor described.
func TestToolPromptSectionAndAvailability(t *testing.T) {
	tool := &sectionTool{funcTool: funcTool{name: "skill"}, section: "## Skills\n- greet: for PERSONA\n"}
	reg := NewRegistry()
	if err := reg.Register(tool); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(&funcTool{name: "other"}); err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{APIKey: "k", Tools: reg, Personas: personaList{
		{Name: "assistant", Identity: "Helper.", Skills: []string{"greet"}},
		{Name: "plain", Identity: "Plain.", Skills: []string{}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	sys, _, err := a.Prompt(context.Background(), Request{})
	if err != nil {
		t.Fatal(err)
	}
	p := sys[0]
	i, j, k := strings.Index(p, "## Using tools"), strings.Index(p, "## Skills\n- greet: for assistant\n"), strings.Index(p, "## Safety")
	if i < 0 || j < i || k < j {
		t.Fatalf("section missing or misplaced (%d %d %d):\n%s", i, j, k, p)
	}
	sys, _, err = a.Prompt(context.Background(), Request{Persona: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sys[0], "## Skills") {
		t.Fatalf("an unavailable tool's section is shown:\n%s", sys[0])
	}
	tools := available(reg.selected(nil), Persona{Name: "plain", Skills: []string{}})
	if len(tools) != 1 || tools[0].Name() != "other" {
		t.Fatalf("offered: %v", tools)
	}
	tool.section = strings.Repeat("x", sectionMaxChars+5)
	sys, _, _ = a.Prompt(context.Background(), Request{})
	if !strings.Contains(sys[0], strings.Repeat("x", sectionMaxChars)+"\n[skill section truncated: 5 more characters not shown]") {
		t.Fatal("a long section is not cut with a notice")
	}
}
