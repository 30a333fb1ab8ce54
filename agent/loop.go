package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/switchboard-bot/switchboard/memory"
)

// closingFallback is said only when the closing no-tools call produced no text.
const closingFallback = "I could not finish this within the limits of one turn. Please ask again, perhaps in smaller steps."

// turn is the state of one running turn; it is used from one goroutine
// (tool calls of a step run concurrently but only write their own slot).
type turn struct {
	a        *Agent
	o        Options
	req      Request
	pre      *memory.TurnView // read before the turn to resolve its persona (turnview.go)
	persona  Persona
	log      *slog.Logger // with the turn's session and id (logger)
	tools    []Tool
	id       string
	tr       *tracker
	seen     map[string]int
	started  time.Time
	callInfo CallInfo
	runtime  string
	refusal  *BudgetError // the Gate refused a model call (budget.go)
	chain    *chain       // the persona's endpoints (failover.go)
	cursor   chainCursor  // where in chain the turn's calls go

	mode    string
	system  string
	notes   string // the second system message (chat notes, summary); "" if none
	history []memory.Message
	msgs    []memory.Message // this turn's messages; msgs[0] is the user message

	usage      memory.Usage
	models     []memory.ModelUsage // usage per answering model, in order of first use
	iterations int
	toolCalls  int
	callSeq    int
	ranTools   bool
	partial    strings.Builder         // text streamed to the user in the current step
	files      *memory.WorkspaceChange // the staged file change to commit (workspace.go)

	mediaNotices []string // what the attachments could not give (attachments.go)
	spoke        bool     // a voice note was transcribed
}

type stepOut struct {
	final bool
	text  string
	calls []memory.ToolCall
}

func (t *turn) emit(e Event) {
	if t.req.OnEvent != nil {
		t.req.OnEvent(e)
	}
}

func (t *turn) emitText(s string) {
	if s == "" {
		return
	}
	t.partial.WriteString(s)
	t.emit(Event{Kind: EventTextDelta, Text: s})
}

func (t *turn) resetText() {
	if t.partial.Len() > 0 {
		t.emit(Event{Kind: EventReset})
	}
	t.partial.Reset()
}

// showAnswer brings the streamed text up to answer: the missing rest, or
// a reset and the whole answer when the stream does not lead to it.
func (t *turn) showAnswer(answer string) {
	reset, rest := reconcile(t.partial.String(), answer)
	if reset {
		t.resetText()
	}
	t.emitText(rest)
}

func (t *turn) now() time.Time { return t.o.Now() }

// execute runs the turn and commits it.
func (t *turn) execute(parent context.Context) (Result, error) {
	if g, ok := t.o.Gate.(turnEnder); ok {
		defer g.TurnEnded(t.req.SessionKey) // after the commit: its tokens are in the book
	}
	if err := t.readContext(parent); err != nil {
		return Result{TurnID: t.id, FinishReason: FinishAPIError}, err
	}
	t.mode = t.pickMode()
	t.system = t.a.systemPrompt(t.persona, t.tools, t.mode)

	t.msgs = []memory.Message{t.userMessage(parent)} // attachments prepared (attachments.go)

	// whole ends at TurnTimeout; the work (ctx) stops the grace before it so
	// the closing answer fits inside the turn's time.
	whole, ctx := parent, parent
	if t.o.TurnTimeout > 0 {
		var cancelWhole, cancelWork context.CancelFunc
		whole, cancelWhole = context.WithTimeout(parent, t.o.TurnTimeout)
		defer cancelWhole()
		ctx, cancelWork = context.WithTimeout(whole, t.o.TurnTimeout-t.grace())
		defer cancelWork()
	}
	text, finish, runErr := t.loop(parent, whole, ctx)

	if finish == FinishCanceled && t.partial.Len() > 0 {
		t.msgs = append(t.msgs, memory.Message{Role: memory.RoleAssistant, Content: t.partial.String(), Time: t.now()})
		text = t.partial.String()
	}
	if finish == FinishAPIError {
		t.tr.enter(StateFailed)
	} else {
		t.tr.enter(StateCompleted)
	}
	text = t.withMediaNotices(text)
	text = t.settleFiles(parent, text)
	ended := t.now()
	res := Result{
		TurnID: t.id, Text: text, Messages: t.msgs, Usage: t.usage, Models: t.models, Iterations: t.iterations,
		ToolCalls: t.toolCalls, Duration: ended.Sub(t.started), FinishReason: finish, Trace: t.tr.entries,
		Files: t.files, FileLimits: t.callInfo.Files.Limits(), Spoke: t.spoke,
	}
	if err := t.commit(parent, finish, text, ended); err != nil {
		runErr = errors.Join(runErr, err)
	}
	if t.refusal != nil && t.req.direct {
		runErr = errors.Join(runErr, t.refusal) // jobs record it as a skip
	}
	t.reportUsage()
	t.a.addUsage(t.req.SessionKey, t.usage)
	t.emit(Event{Kind: EventTurnEnd, Usage: t.usage, Start: t.started, End: ended})
	if t.a.log.Enabled(parent, slog.LevelInfo) {
		t.logger().LogAttrs(parent, slog.LevelInfo, "turn finished", slog.String("finish", string(finish)),
			slog.Int("iterations", t.iterations), slog.Int("tool_calls", t.toolCalls),
			slog.Int("tokens", t.usage.TotalTokens), slog.Duration("duration", res.Duration))
	}
	return res, runErr
}

// commit stores the finished turn: through Request.Commit when set (the
// caller's one transaction), else Sessions.AppendTurn. A failed turn is
// committed only when tools ran (their effects must stay on record); then
// without Sources, so the inbox still sees it unanswered. A canceled turn is
// committed without Sources too: the partial text is not an answer; after a
// shutdown the inbox must replay the message (after /stop the handler clears
// the inbox items itself).
func (t *turn) commit(parent context.Context, finish FinishReason, text string, ended time.Time) error {
	if finish == FinishAPIError && !t.ranTools || t.skipRefusedCommit() {
		return nil
	}
	turn := memory.Turn{ID: t.id, Messages: t.msgs, Usage: t.usage, Started: t.started, Ended: ended,
		FinishReason: string(finish), Answer: text, Models: t.models}
	t.recordTurn(&turn)
	if t.files != nil {
		turn.Files, turn.FileLimits, turn.FilesOf = t.files, t.callInfo.Files.Limits(), t.req.FilesOf
	}
	if finish != FinishAPIError && finish != FinishCanceled {
		turn.Sources = t.req.Sources
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), 10*time.Second)
	defer cancel()
	var err error
	if t.req.Commit != nil {
		err = t.req.Commit(ctx, turn, t.tr.entries)
	} else {
		err = t.o.Sessions.AppendTurn(ctx, t.req.SessionKey, turn)
	}
	if err != nil {
		return fmt.Errorf("agent: commit turn of %s: %w", t.req.SessionKey, err)
	}
	return nil
}

func (t *turn) pickMode() string { return t.a.mode(t.tools) }

// grace is the part of TurnTimeout kept for the closing answer: FinalGrace,
// at most a quarter of TurnTimeout.
func (t *turn) grace() time.Duration {
	return min(t.o.FinalGrace, t.o.TurnTimeout/4)
}

// loop is the ReAct iteration (DESIGN.md §3). parent is the caller's context
// (its end is a cancellation), whole ends at TurnTimeout, ctx (the work) the
// grace before it.
func (t *turn) loop(parent, whole, ctx context.Context) (string, FinishReason, error) {
	for {
		if reason, why, hit := t.limitReached(); hit {
			return t.closing(parent, whole, ctx, reason, why)
		}
		t.iterations++
		t.tr.step = t.iterations
		t.tr.enter(StatePlanning)
		st, err := t.step(ctx, "")
		if err != nil {
			return t.failed(parent, whole, ctx, err)
		}
		if st.final {
			return st.text, FinishFinal, nil
		}
		t.tr.enter(StateExecuting)
		stop, reason, why := t.runTools(ctx, st.calls)
		t.tr.enter(StateObserving)
		if ctx.Err() != nil {
			return t.failed(parent, whole, ctx, ctx.Err())
		}
		if stop {
			return t.closing(parent, whole, ctx, reason, why)
		}
	}
}

func (t *turn) limitReached() (FinishReason, string, bool) {
	if t.iterations >= t.o.MaxIterations {
		return FinishMaxIterations, fmt.Sprintf("the limit of %d steps for this turn is reached", t.o.MaxIterations), true
	}
	if t.o.TokenBudget > 0 && t.usage.TotalTokens >= t.o.TokenBudget {
		return FinishBudget, fmt.Sprintf("the token budget of this turn (%d) is used up", t.o.TokenBudget), true
	}
	return "", "", false
}

// failed sorts an error out: cancellation, the turn's own deadline (a limit:
// answer with what we have) or a real failure.
func (t *turn) failed(parent, whole, ctx context.Context, err error) (string, FinishReason, error) {
	if be := (*BudgetError)(nil); errors.As(err, &be) {
		return t.refused(be)
	}
	if parent.Err() != nil {
		return "", FinishCanceled, fmt.Errorf("agent: turn canceled: %w", parent.Err())
	}
	if ctx.Err() != nil {
		return t.closing(parent, whole, ctx, FinishBudget, fmt.Sprintf("the time limit of this turn (%s) is reached", t.o.TurnTimeout))
	}
	return "", FinishAPIError, err
}

// closing makes the last call without tools so the user gets an answer. When
// the work's time is up it runs in what is left of the turn (whole); if that
// ends too, the turn ends with the text streamed so far or closingFallback.
func (t *turn) closing(parent, whole, ctx context.Context, reason FinishReason, why string) (string, FinishReason, error) {
	if ctx.Err() != nil {
		if parent.Err() != nil {
			return "", FinishCanceled, fmt.Errorf("agent: turn canceled: %w", parent.Err())
		}
		ctx = whole
	}
	t.a.log.Info("turn limit reached; asking for a closing answer", slog.String("turn", t.id), slog.String("why", why))
	t.iterations++
	t.tr.step = t.iterations
	t.tr.enter(StatePlanning)
	st, err := t.step(ctx, why)
	if err != nil {
		if be := (*BudgetError)(nil); errors.As(err, &be) {
			return t.refused(be)
		}
		if parent.Err() != nil {
			return "", FinishCanceled, fmt.Errorf("agent: turn canceled: %w", parent.Err())
		}
		if whole.Err() != nil {
			return t.outOfTime(reason), reason, nil
		}
		return "", FinishAPIError, err
	}
	return st.text, reason, nil
}

// outOfTime ends a turn whose closing answer did not fit in TurnTimeout: the
// text streamed so far is the answer, or closingFallback if there is none.
func (t *turn) outOfTime(reason FinishReason) string {
	t.a.log.Warn("the closing answer did not finish within the turn timeout", slog.String("turn", t.id),
		slog.Duration("turn_timeout", t.o.TurnTimeout), slog.String("finish", string(reason)))
	text := t.partial.String()
	if strings.TrimSpace(text) == "" {
		t.resetText()
		text = closingFallback
		t.emitText(text)
	}
	t.msgs = append(t.msgs, memory.Message{Role: memory.RoleAssistant, Content: text, Time: t.now()})
	return text
}

func closingNote(why string) string {
	return fmt.Sprintf("[system note: %s. Do not call any tools now. Answer my request with what you have so far; if something is missing, say briefly what.]", why)
}

func (t *turn) chatRequest(msgs []openai.ChatCompletionMessage) ChatRequest {
	r := ChatRequest{Model: t.o.Model, Messages: msgs, Temperature: t.o.Temperature, MaxTokens: t.o.MaxTokens}
	if t.persona.Model != "" {
		r.Model = t.persona.Model
	}
	if t.persona.Temperature != nil {
		r.Temperature = t.persona.Temperature
	}
	if t.persona.MaxTokens > 0 {
		r.MaxTokens = t.persona.MaxTokens
	}
	return r
}

func (t *turn) render() []openai.ChatCompletionMessage {
	return t.a.builder.Messages([]string{t.system, t.notes}, t.history, t.msgs, userInput{runtime: t.runtime, media: t.req.Media,
		group: t.req.Runtime.ChatType == "group" || t.req.Runtime.ChatType == "thread"}, t.mode)
}

// call runs one model call, recording it in the trace and the usage.
func (t *turn) call(ctx context.Context, req ChatRequest, onText func(string), onDiscard func()) (ChatResponse, error) {
	if err := t.gate(ctx); err != nil {
		return ChatResponse{}, err
	}
	start := t.now()
	resp, err := t.a.chat(ctx, t.chain, &t.cursor, req, StreamObserver{
		Text:      onText,
		Reasoning: func(s string) { t.emit(Event{Kind: EventReasoningDelta, Text: s}) },
		Discard:   onDiscard,
		State:     t.tr.enterInner,
	})
	t.tr.leaveInner()
	e := TraceEntry{Kind: TraceModel, Elapsed: t.now().Sub(start)}
	if err != nil {
		e.Error = err.Error()
	} else {
		e.Observation = modelObservation(resp)
	}
	t.tr.add(e)
	t.usage = t.usage.Add(resp.Usage)
	t.addModelUsage(resp)
	return resp, err
}

// modelObservation is a model call's trace summary: "finish=stop
// tool_calls=0 tokens=42 attempts=1 model=gpt-4o-mini endpoint="primary""
// (appended by hand: once a model call,
// fmt's formatting showed in the handler's profile).
func modelObservation(resp ChatResponse) string {
	b := make([]byte, 0, 64)
	b = append(b, "finish="...)
	b = append(b, resp.FinishReason...)
	b = append(b, " tool_calls="...)
	b = strconv.AppendInt(b, int64(len(resp.ToolCalls)), 10)
	b = append(b, " tokens="...)
	b = strconv.AppendInt(b, int64(resp.Usage.TotalTokens), 10)
	b = append(b, " attempts="...)
	b = strconv.AppendInt(b, int64(resp.Attempts), 10)
	if resp.Model != "" {
		b = append(b, " model="...)
		b = append(b, resp.Model...)
		b = append(b, " endpoint="...)
		b = append(b, strconv.Quote(resp.Endpoint)...)
	}
	return string(b)
}

// addModelUsage adds an answered call's usage to its model's entry.
func (t *turn) addModelUsage(resp ChatResponse) {
	if resp.Model == "" {
		return
	}
	for i := range t.models {
		if m := &t.models[i]; m.Model == resp.Model && m.Endpoint == resp.Endpoint {
			m.Usage = m.Usage.Add(resp.Usage)
			return
		}
	}
	t.models = append(t.models, memory.ModelUsage{Model: resp.Model, Endpoint: resp.Endpoint, Usage: resp.Usage})
}

// step asks the model for the next move. A non-empty note makes it the
// closing call: no tools, and the answer is whatever text comes back.
func (t *turn) step(ctx context.Context, note string) (stepOut, error) {
	if t.mode == renderJSON {
		return t.stepJSON(ctx, note)
	}
	final := note != ""
	msgs := t.render()
	if final {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: closingNote(note)})
	}
	req := t.chatRequest(msgs)
	if !final && t.mode == renderNative {
		req.Tools = openAITools(t.tools)
	}
	t.partial.Reset()
	resp, err := t.call(ctx, req, t.emitText, t.resetText)
	if err != nil {
		if !final && t.mode == renderNative && t.o.ToolProtocol == ProtocolAuto && rejectsTools(err) {
			t.a.jsonFallback.Store(true)
			t.a.log.Warn("the model endpoint rejects native tools; switching to the JSON tool protocol",
				slog.String("error", err.Error()))
			t.mode = renderJSON
			t.system = t.a.systemPrompt(t.persona, t.tools, t.mode)
			return t.stepJSON(ctx, note)
		}
		return stepOut{}, err
	}
	if len(resp.ToolCalls) > 0 && !final {
		t.resetText() // text before a tool call is not the answer
		t.msgs = append(t.msgs, memory.Message{Role: memory.RoleAssistant, Content: resp.Content,
			Reasoning: resp.Reasoning, ToolCalls: resp.ToolCalls, Time: t.now()})
		return stepOut{calls: resp.ToolCalls}, nil
	}
	text := resp.Content
	if resp.Cut {
		t.showAnswer(text) // the cut marker was not streamed
	}
	if final && strings.TrimSpace(text) == "" {
		t.resetText()
		text = closingFallback
		t.emitText(text)
	}
	t.msgs = append(t.msgs, memory.Message{Role: memory.RoleAssistant, Content: text, Reasoning: resp.Reasoning, Time: t.now()})
	return stepOut{final: true, text: text}, nil
}

func repairPrompt(err error) string {
	return fmt.Sprintf(`Your last reply could not be used: %v. Reply again with exactly one JSON object and nothing else: {"type":"action","tool":"<tool name>","args":{…}} or {"type":"final","answer":"…"}.`, err)
}

// stepJSON is a step in the JSON text protocol, with one repair round.
func (t *turn) stepJSON(ctx context.Context, note string) (stepOut, error) {
	final := note != ""
	var extra []openai.ChatCompletionMessage
	if final {
		extra = append(extra, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser,
			Content: closingNote(note) + ` Reply with {"type":"final","answer":"…"}.`})
	}
	for repair := 0; ; repair++ {
		msgs := append(t.render(), extra...)
		t.partial.Reset()
		as := &answerStreamer{emit: t.emitText}
		resp, err := t.call(ctx, t.chatRequest(msgs), func(s string) { as.Feed(s) }, func() {
			t.resetText()
			as = &answerStreamer{emit: t.emitText}
		})
		if err != nil {
			return stepOut{}, err
		}
		if resp.Cut {
			// The envelope cannot be complete: the answer is what was
			// streamed of it (nothing for an action), with the marker.
			text := withCutMarker(as.Streamed(), t.o.MaxResponseChars)
			t.showAnswer(text)
			t.msgs = append(t.msgs, memory.Message{Role: memory.RoleAssistant, Content: text, Reasoning: resp.Reasoning, Time: t.now()})
			return stepOut{final: true, text: text}, nil
		}
		env, perr := ParseEnvelope(resp.Content)
		switch {
		case perr == nil && env.Type == EnvelopeFinal:
			t.showAnswer(env.Answer)
			t.msgs = append(t.msgs, memory.Message{Role: memory.RoleAssistant, Content: env.Answer, Reasoning: resp.Reasoning, Time: t.now()})
			return stepOut{final: true, text: env.Answer}, nil
		case perr == nil && env.Type == EnvelopeAction && !final:
			t.resetText()
			t.callSeq++
			call := memory.ToolCall{ID: fmt.Sprintf("call_%s_%d", t.id, t.callSeq), Name: env.Tool, Arguments: string(env.Args)}
			t.msgs = append(t.msgs, memory.Message{Role: memory.RoleAssistant, Reasoning: resp.Reasoning,
				ToolCalls: []memory.ToolCall{call}, Time: t.now()})
			return stepOut{calls: []memory.ToolCall{call}}, nil
		}
		t.resetText()
		if final {
			text := stripFence(resp.Content)
			if perr == nil || strings.HasPrefix(text, "{") || text == "" {
				text = closingFallback
			}
			t.emitText(text)
			t.msgs = append(t.msgs, memory.Message{Role: memory.RoleAssistant, Content: text, Time: t.now()})
			return stepOut{final: true, text: text}, nil
		}
		if repair >= 1 {
			// Still no envelope after the repair round: a model that keeps
			// answering in prose has answered (plainTextAnswer).
			if text, ok := plainTextAnswer(resp.Content); ok && perr != nil {
				t.showAnswer(text)
				t.msgs = append(t.msgs, memory.Message{Role: memory.RoleAssistant, Content: text, Reasoning: resp.Reasoning, Time: t.now()})
				return stepOut{final: true, text: text}, nil
			}
			return stepOut{}, fmt.Errorf("agent: %w after a repair round: %v", ErrToolProtocol, perr)
		}
		t.tr.add(TraceEntry{Kind: TraceModel, Observation: "repair round", Error: perr.Error()})
		extra = append(extra,
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: resp.Content},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: repairPrompt(perr)})
	}
}
