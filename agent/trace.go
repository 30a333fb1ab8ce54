package agent

import (
	"strings"
	"time"
	"unicode/utf8"
)

// State is the outer state of a turn.
type State string

// Outer states.
const (
	StatePlanning   State = "planning"   // asking the model what to do next
	StateExecuting  State = "executing"  // running tool calls
	StateObserving  State = "observing"  // feeding results back, checking limits
	StateCompacting State = "compacting" // shortening history (Compactor hook)
	StateCompleted  State = "completed"
	StateFailed     State = "failed"
)

// InnerState is the state within a model call or tool execution.
type InnerState string

// Inner states.
const (
	InnerCalling       InnerState = "calling"   // request sent, waiting for the first chunk
	InnerStreaming     InnerState = "streaming" // chunks arriving
	InnerToolExecuting InnerState = "tool-executing"
	InnerRetrying      InnerState = "retrying" // backing off before another attempt
)

// TraceKind says what a TraceEntry records.
type TraceKind string

// Trace entry kinds.
const (
	TraceTransition TraceKind = "transition" // From → To; Elapsed is the time spent in From
	TraceModel      TraceKind = "model"      // one model call (with its retries)
	TraceTool       TraceKind = "tool"       // one tool call
)

// TraceEntry is one line of a turn's trace (written to the audit log).
type TraceEntry struct {
	Step        int
	Kind        TraceKind
	From, To    string // transitions: "planning", "planning/streaming", …
	Tool        string
	NoSuchTool  bool   // Tool is a name the model made up (no tool has it)
	Args        string // argument summary
	Observation string // observation summary (or the model's finish info)
	Elapsed     time.Duration
	Error       string
	At          time.Time
}

// tracker records state transitions with their durations. It is used from the
// turn's goroutine only.
type tracker struct {
	now        func() time.Time
	step       int
	outer      State
	outerSince time.Time
	inner      InnerState
	innerSince time.Time
	entries    []TraceEntry
}

func newTracker(now func() time.Time) *tracker {
	t := now()
	// A turn without tools records ~10 entries: one allocation, not five.
	entries := make([]TraceEntry, 1, 12)
	entries[0] = TraceEntry{Kind: TraceTransition, From: "", To: string(StatePlanning), At: t}
	return &tracker{now: now, outer: StatePlanning, outerSince: t, entries: entries}
}

func (t *tracker) full(o State, i InnerState) string {
	if i == "" {
		return string(o)
	}
	if s, ok := fullStates[[2]string{string(o), string(i)}]; ok {
		return s // every transition of every model call: no concatenation
	}
	return string(o) + "/" + string(i)
}

// fullStates are the "outer/inner" names of the states a turn passes through.
var fullStates = func() map[[2]string]string {
	m := map[[2]string]string{}
	for _, o := range []State{StatePlanning, StateExecuting, StateObserving, StateCompacting} {
		for _, i := range []InnerState{InnerCalling, InnerStreaming, InnerToolExecuting, InnerRetrying} {
			m[[2]string{string(o), string(i)}] = string(o) + "/" + string(i)
		}
	}
	return m
}()

// enter moves to outer state s (ending any inner state).
func (t *tracker) enter(s State) {
	t.leaveInner()
	if s == t.outer {
		return
	}
	now := t.now()
	t.entries = append(t.entries, TraceEntry{Step: t.step, Kind: TraceTransition, From: string(t.outer),
		To: string(s), Elapsed: now.Sub(t.outerSince), At: now})
	t.outer, t.outerSince = s, now
}

// enterInner moves to inner state s within the current outer state.
func (t *tracker) enterInner(s InnerState) {
	if s == t.inner {
		return
	}
	now := t.now()
	from, since := t.full(t.outer, t.inner), t.innerSince
	if t.inner == "" {
		since = t.outerSince
		if since.Before(t.lastAt()) {
			since = t.lastAt()
		}
	}
	t.entries = append(t.entries, TraceEntry{Step: t.step, Kind: TraceTransition, From: from,
		To: t.full(t.outer, s), Elapsed: now.Sub(since), At: now})
	t.inner, t.innerSince = s, now
}

func (t *tracker) leaveInner() {
	if t.inner == "" {
		return
	}
	now := t.now()
	t.entries = append(t.entries, TraceEntry{Step: t.step, Kind: TraceTransition, From: t.full(t.outer, t.inner),
		To: string(t.outer), Elapsed: now.Sub(t.innerSince), At: now})
	t.inner = ""
}

func (t *tracker) lastAt() time.Time {
	if len(t.entries) == 0 {
		return time.Time{}
	}
	return t.entries[len(t.entries)-1].At
}

func (t *tracker) add(e TraceEntry) {
	e.Step = t.step
	if e.At.IsZero() {
		e.At = t.now()
	}
	t.entries = append(t.entries, e)
}

// summarize shortens s to about n characters on one line for the trace.
func summarize(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
