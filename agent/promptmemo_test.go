package agent

import (
	"testing"
	"unsafe"
)

// The remembered system prompt is always the one the builder would build
// now: a change of identity, of a tool's prompt section (a skill added), of
// the tools offered or of the protocol gives a new prompt; unchanged inputs
// share the last one.
func TestSystemPromptMemoFollowsItsInputs(t *testing.T) {
	a, err := New(Options{APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	skills := &sectionTool{funcTool: funcTool{name: "skill"}, section: "## Skills\n- greet: for PERSONA\n"}
	memoryTool := &funcTool{name: MemoryToolName}
	alice := Persona{Name: "alice", Identity: "You are Alice."}
	steps := []struct {
		name   string
		before func()
		p      Persona
		tools  []Tool
		mode   string
		shared bool // the same string as the step before
	}{
		{"first", nil, alice, []Tool{skills}, renderNative, false},
		{"same inputs", nil, alice, []Tool{skills}, renderNative, true},
		{"plain mode, same text", nil, alice, []Tool{skills}, renderPlain, true},
		{"other persona name: the section names it", nil, Persona{Name: "bob", Identity: "You are Alice."}, []Tool{skills}, renderNative, false},
		{"skill added", func() { skills.section += "- wave: for PERSONA\n" }, Persona{Name: "bob", Identity: "You are Alice."}, []Tool{skills}, renderNative, false},
		{"identity changed", nil, Persona{Name: "bob", Identity: "You are Bob."}, []Tool{skills}, renderNative, false},
		{"memory tool offered", nil, Persona{Name: "bob", Identity: "You are Bob."}, []Tool{skills, memoryTool}, renderNative, false},
		{"no tools", nil, Persona{Name: "bob", Identity: "You are Bob."}, nil, renderNative, false},
		{"json protocol", nil, alice, []Tool{skills}, renderJSON, false},
	}
	var last string
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		got := a.systemPrompt(st.p, st.tools, st.mode)
		if want := a.builder.SystemPrompt(st.p, st.tools, st.mode); got != want {
			t.Fatalf("%s: prompt\n%q\nwant the builder's\n%q", st.name, got, want)
		}
		if shared := unsafe.StringData(got) == unsafe.StringData(last); shared != st.shared {
			t.Errorf("%s: shared with the step before = %v, want %v", st.name, shared, st.shared)
		}
		last = got
	}
}
