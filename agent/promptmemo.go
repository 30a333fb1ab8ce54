package agent

import (
	"sync/atomic"
	"time"
)

// promptMemo is the last system prompt a turn built without the JSON tool
// protocol, with what it was built from: the persona's identity, whether
// tools and the memory tool are offered, and the tools' prompt sections
// (skills change theirs when the skills directory does). Turns of the same
// persona and tools share it instead of building ~4 KB of text each.
type promptMemo struct {
	identity, sections string
	tools, memory      bool
	prompt             string
}

func (m *promptMemo) sameInputs(o *promptMemo) bool {
	return m.identity == o.identity && m.sections == o.sections && m.tools == o.tools && m.memory == o.memory
}

// systemPrompt is builder.SystemPrompt, remembered for the last inputs
// (renderJSON lists every tool's schema in the prompt: built each time).
func (a *Agent) systemPrompt(p Persona, tools []Tool, mode string) string {
	if mode == renderJSON {
		return a.builder.SystemPrompt(p, tools, mode)
	}
	want := &promptMemo{identity: p.Identity, sections: toolSections(p, tools), tools: len(tools) > 0, memory: hasTool(tools, MemoryToolName)}
	if m := a.prompt.Load(); m != nil && m.sameInputs(want) {
		return m.prompt
	}
	want.prompt = a.builder.systemPrompt(p, tools, mode, want.sections)
	a.prompt.Store(want)
	return want.prompt
}

// clockMemo remembers RuntimeBlock's time line for the minute it shows:
// formatting the date with its zone was ~1.5 % of a turn's CPU, for a line
// that changes once a minute. A nil memo formats every time.
type clockMemo struct{ last atomic.Pointer[clockLine] }

type clockLine struct {
	minute int64
	loc    *time.Location
	text   string
}

// line is the "time: …" line of t in loc, with its newline.
func (m *clockMemo) line(t time.Time, loc *time.Location) string {
	minute := t.Unix() / 60
	if m != nil {
		if c := m.last.Load(); c != nil && c.minute == minute && c.loc == loc {
			return c.text
		}
	}
	lt := t.In(loc)
	text := "time: " + lt.Format("Monday, 2 January 2006 15:04 MST") + " (" + loc.String() + ")\n"
	if m != nil {
		m.last.Store(&clockLine{minute: minute, loc: loc, text: text})
	}
	return text
}
