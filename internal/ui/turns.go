package ui

import (
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/memory"
)

// turnView is one stored turn as the chat and session pages show it.
type turnView struct {
	ID       string
	Started  time.Time
	Duration time.Duration
	Finish   string
	Usage    memory.Usage
	Models   []memory.ModelUsage // the models that answered, in order of first use
	Items    []itemView
	Timeline []stepView
	Traced   bool // the timeline is the agent's trace (else from message times)
	// Waterfall is the timeline as a picture (waterfall.go); nil without
	// steps. spans are its bars before layout.
	Waterfall *waterfall
	spans     []wfSpan
}

// itemView is a user message, an answer, or a tool call with its result.
type itemView struct {
	Role   string // user | assistant | tool
	Name   string // sender, or tool name
	Text   string
	Args   string
	Result string
	Done   bool // a tool call has its result
	Time   time.Time
}

// stepView is one line of a turn's timeline.
type stepView struct {
	Kind    string
	Label   string
	Detail  string
	Elapsed time.Duration
	Error   string
	Offset  time.Duration // since the turn started
}

// maxShownTurns bounds the turns a page renders (the newest).
const maxShownTurns = 50

// turnViews converts stored turns, newest last, at most maxShownTurns.
func turnViews(turns []memory.Turn, stats *Stats) []turnView {
	if len(turns) > maxShownTurns {
		turns = turns[len(turns)-maxShownTurns:]
	}
	out := make([]turnView, 0, len(turns))
	for _, t := range turns {
		out = append(out, turnViewOf(t, stats))
	}
	return out
}

func turnViewOf(t memory.Turn, stats *Stats) turnView {
	v := turnView{ID: t.ID, Started: t.Started, Finish: t.FinishReason, Usage: t.Usage, Models: t.Models}
	if !t.Ended.IsZero() {
		v.Duration = t.Ended.Sub(t.Started)
	}
	calls := map[string]int{} // tool call id → index in Items
	for _, m := range t.Messages {
		switch m.Role {
		case memory.RoleUser:
			v.Items = append(v.Items, itemView{Role: "user", Name: m.Name, Text: m.Content, Time: m.Time})
		case memory.RoleAssistant:
			if m.Content != "" {
				v.Items = append(v.Items, itemView{Role: "assistant", Text: m.Content, Time: m.Time})
			}
			for _, c := range m.ToolCalls {
				calls[c.ID] = len(v.Items)
				v.Items = append(v.Items, itemView{Role: "tool", Name: c.Name, Args: c.Arguments, Time: m.Time})
			}
		case memory.RoleTool:
			if i, ok := calls[m.ToolCallID]; ok {
				v.Items[i].Result, v.Items[i].Done = m.Content, true
				continue
			}
			v.Items = append(v.Items, itemView{Role: "tool", Name: m.Name, Result: m.Content, Done: true, Time: m.Time})
		}
	}
	if tr, ok := stats.Trace(t.ID); ok {
		v.Timeline, v.Traced = traceSteps(tr.Entries, t.Started), true
		v.spans = traceSpans(tr.Entries, t.Started)
		if q, ok := queueSpan(t); ok {
			v.spans = append([]wfSpan{q}, v.spans...)
		}
		v.Waterfall = layoutWaterfall(v.spans, v.Duration)
		if len(v.Models) == 0 {
			v.Models = tr.Models
		}
		if v.Finish == "" {
			v.Finish = tr.Finish
		}
		return v
	}
	v.Timeline = messageSteps(t)
	v.spans = messageSpans(v.Timeline)
	if q, ok := queueSpan(t); ok {
		v.spans = append([]wfSpan{q}, v.spans...)
	}
	v.Waterfall = layoutWaterfall(v.spans, v.Duration)
	return v
}

// traceSteps turns the agent's trace into timeline lines.
func traceSteps(entries []agent.TraceEntry, started time.Time) []stepView {
	var out []stepView
	for _, e := range entries {
		s := stepView{Kind: string(e.Kind), Elapsed: e.Elapsed, Error: e.Error}
		if !e.At.IsZero() && !started.IsZero() && !e.At.Before(started) {
			s.Offset = e.At.Sub(started)
		}
		switch e.Kind {
		case agent.TraceTransition:
			if e.From == "" {
				continue // the start
			}
			s.Label, s.Detail = e.From, "→ "+e.To
		case agent.TraceModel:
			s.Label, s.Detail = "model call", e.Observation
		case agent.TraceTool:
			s.Label, s.Detail = "tool "+e.Tool, e.Args
		default:
			s.Label = string(e.Kind)
		}
		out = append(out, s)
	}
	return out
}

// messageSteps is the timeline of a turn without its trace: the time from
// one stored message to the next.
func messageSteps(t memory.Turn) []stepView {
	var out []stepView
	prev := t.Started
	for _, m := range t.Messages {
		if m.Role == memory.RoleUser || m.Time.IsZero() || prev.IsZero() {
			continue
		}
		s := stepView{Kind: "message", Elapsed: max(m.Time.Sub(prev), 0), Offset: max(m.Time.Sub(t.Started), 0)}
		switch {
		case m.Role == memory.RoleTool:
			s.Label = "tool " + m.Name
		case len(m.ToolCalls) > 0:
			s.Label = "model: tool calls"
		default:
			s.Label = "model: answer"
		}
		out = append(out, s)
		prev = m.Time
	}
	return out
}
