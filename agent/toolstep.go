package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/switchboard-bot/switchboard/memory"
)

// plannedCall is one tool call of a step: checked, then run (when run is set)
// and its result recorded.
type plannedCall struct {
	call   memory.ToolCall
	tool   Tool
	run    bool
	noTool bool // no tool has the name the model called
	res    toolRun
}

// stepStop says why a step's tool calls end the turn (stop unset = they don't).
type stepStop struct {
	stop   bool
	reason FinishReason
	why    string
}

func (p *plannedCall) notRun(msg string) { p.res = toolRun{output: "not run: " + msg, isError: true} }
func (p *plannedCall) fail(msg string)   { p.res = toolRun{output: "error: " + msg, isError: true} }

func (p *plannedCall) deny(err error) {
	p.res = toolRun{output: "denied: " + err.Error(), isError: true, err: err}
}

func canonicalArgs(raw string) string {
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return strings.TrimSpace(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func (t *turn) toolByName(name string) (Tool, bool) {
	for _, tl := range t.tools {
		if tl.Name() == name {
			return tl, true
		}
	}
	return nil, false
}

func (t *turn) toolNames() string {
	if len(t.tools) == 0 {
		return "no tools are available"
	}
	names := make([]string, len(t.tools))
	for i, tl := range t.tools {
		names[i] = tl.Name()
	}
	return "available tools: " + strings.Join(names, ", ")
}

// runTools checks, approves and runs the calls of one step (concurrently),
// then appends the results in the model's order.
func (t *turn) runTools(ctx context.Context, calls []memory.ToolCall) (stop bool, reason FinishReason, why string) {
	plans, st := t.planTools(ctx, calls)
	t.executeTools(ctx, plans)
	t.recordTools(ctx, plans)
	return st.stop, st.reason, st.why
}

// planTools checks and approves every call of a step, in order. Once a call
// stops the turn, the later ones are not run; after a denial none is.
func (t *turn) planTools(ctx context.Context, calls []memory.ToolCall) ([]plannedCall, stepStop) {
	plans := make([]plannedCall, len(calls))
	var st stepStop
	for i, c := range calls {
		p := &plans[i]
		p.call = c
		if strings.TrimSpace(p.call.Arguments) == "" {
			p.call.Arguments = "{}"
		}
		cc := c
		t.emit(Event{Kind: EventToolCall, ToolCall: &cc})
		if st.stop {
			p.notRun(st.why)
			continue
		}
		if s := t.planTool(ctx, p); s.stop {
			st = s
		}
	}
	if st.reason == FinishToolDenied {
		for i := range plans {
			if plans[i].run {
				plans[i].run = false
				plans[i].notRun("another tool call of this step was denied")
			}
		}
	}
	return plans, st
}

// planTool checks one call against the limits, the chat's tools, repeats,
// the tool's schema and the approver; it sets p.run when the call may run,
// or p.res otherwise, and says whether the call stops the turn.
func (t *turn) planTool(ctx context.Context, p *plannedCall) stepStop {
	c := p.call
	if t.toolCalls >= t.o.MaxToolCalls {
		st := stepStop{true, FinishMaxIterations, fmt.Sprintf("the limit of %d tool calls for this turn is reached", t.o.MaxToolCalls)}
		p.notRun(st.why)
		return st
	}
	t.toolCalls++
	tool, ok := t.toolByName(c.Name)
	if !ok {
		if _, exists := t.o.Tools.Get(c.Name); exists {
			// A real tool this chat may not use (persona or request
			// allowlist): a policy denial, never a run, and the turn
			// ends with a closing answer as for any other denial.
			p.deny(fmt.Errorf("the tool %s is not allowed in this chat; %s", c.Name, t.toolNames()))
			return stepStop{true, FinishToolDenied, fmt.Sprintf("the call of %s was denied", c.Name)}
		}
		p.noTool = true
		p.fail(fmt.Sprintf("unknown tool %q; %s", c.Name, t.toolNames()))
		return stepStop{}
	}
	key := c.Name + "\x00" + canonicalArgs(c.Arguments)
	t.seen[key]++
	if n := t.seen[key]; n >= 3 {
		p.fail(fmt.Sprintf("stopped: %s was already called %d times with exactly these arguments in this turn. Do not repeat it; use the results you have or answer.", c.Name, n-1))
		if n >= 4 {
			return stepStop{true, FinishMaxIterations, "the same tool call kept repeating"}
		}
		return stepStop{}
	}
	if err := t.o.Tools.Validate(c.Name, json.RawMessage(c.Arguments)); err != nil {
		// Bounded like a tool's result: the error may quote the argument.
		p.fail(truncate(fmt.Sprintf("invalid arguments for %s: %v", c.Name, err), t.o.ObservationMaxLen))
		return stepStop{}
	}
	if err := t.approve(ctx, c, tool); err != nil {
		p.deny(err)
		return stepStop{true, FinishToolDenied, fmt.Sprintf("the call of %s was denied", c.Name)}
	}
	p.tool, p.run = tool, true
	return stepStop{}
}

// executeTools runs the planned calls, at most ParallelTools at a time; each
// writes only its own plan's result.
func (t *turn) executeTools(ctx context.Context, plans []plannedCall) {
	t.tr.enterInner(InnerToolExecuting)
	defer t.tr.leaveInner()
	tctx := WithCallInfo(ctx, t.callInfo)
	sem := make(chan struct{}, t.o.ParallelTools)
	var wg sync.WaitGroup
	for i := range plans {
		if !plans[i].run {
			continue
		}
		t.ranTools = true
		wg.Add(1)
		go func(p *plannedCall) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			p.res = runTool(tctx, t.o, p.tool, json.RawMessage(p.call.Arguments))
		}(&plans[i])
	}
	wg.Wait()
}

// recordTools appends the results in the model's order to the turn's
// messages, the events and the trace.
func (t *turn) recordTools(ctx context.Context, plans []plannedCall) {
	for i := range plans {
		p := &plans[i]
		if p.run && p.res.err != nil && ctx.Err() != nil {
			p.res.output = "error: canceled before the tool finished"
		}
		t.msgs = append(t.msgs, memory.Message{Role: memory.RoleTool, Content: p.res.output,
			ToolCallID: p.call.ID, Name: p.call.Name, Time: t.now()})
		call := p.call
		t.emit(Event{Kind: EventToolResult, Text: p.res.output, ToolCall: &call, IsError: p.res.isError})
		e := TraceEntry{Kind: TraceTool, Tool: p.call.Name, NoSuchTool: p.noTool, Args: summarize(p.call.Arguments, 200),
			Observation: summarize(p.res.output, 200), Elapsed: p.res.elapsed}
		if p.res.isError {
			e.Error = summarize(p.res.output, 200)
		}
		t.tr.add(e)
	}
}
