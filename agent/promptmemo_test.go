package agent

import (
	"strings"
	"testing"
	"time"
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

// The remembered time line is the one RuntimeBlock would format: it follows
// the minute and the location, and a builder without a memo agrees.
func TestClockMemoFollowsTheMinuteAndTheZone(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	base := time.Date(2026, 3, 29, 0, 59, 30, 0, time.UTC) // 01:59 CET; at 01:00 UTC Berlin moves to CEST
	steps := []struct {
		at  time.Time
		loc *time.Location
	}{
		{base, berlin},
		{base.Add(20 * time.Second), berlin}, // same minute
		{base.Add(40 * time.Second), berlin}, // 03:00 CEST
		{base.Add(40 * time.Second), time.UTC},
		{base.Add(41 * time.Second), berlin},
	}
	memo := &clockMemo{}
	for _, s := range steps {
		want := "time: " + s.at.In(s.loc).Format("Monday, 2 January 2006 15:04 MST") + " (" + s.loc.String() + ")\n"
		if got := memo.line(s.at, s.loc); got != want {
			t.Errorf("at %v in %v: memo %q, want %q", s.at, s.loc, got, want)
		}
		b := ContextBuilder{Location: s.loc, Now: func() time.Time { return s.at }}
		if got := b.RuntimeBlock(Runtime{}, ""); !strings.Contains(got, want) {
			t.Errorf("RuntimeBlock without a memo = %q, want the line %q", got, want)
		}
	}
	if got := memo.line(base.Add(40*time.Second), berlin); !strings.Contains(got, "03:00 CEST") {
		t.Errorf("after the switch to summer time: %q", got)
	}
}
