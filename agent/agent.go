package agent

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

// Result is the outcome of one turn.
type Result struct {
	TurnID   string
	Text     string           // the final answer
	Messages []memory.Message // what the turn added to the session
	Usage    memory.Usage
	// Models is Usage split by the model (and endpoint) that answered, in
	// order of first use; more than one entry only after a failover.
	Models       []memory.ModelUsage
	Iterations   int // model steps (the closing no-tools call included)
	ToolCalls    int
	Duration     time.Duration
	FinishReason FinishReason
	Trace        []TraceEntry
	// Files is the workspace change committed with the turn (nil: none);
	// the handler's recommit after a storage failure carries it too.
	Files      *memory.WorkspaceChange
	FileLimits memory.WorkspaceLimits
	// Spoke: the user's message was a voice note (transcribed), so the
	// handler may answer with a voice note too (media.speech).
	Spoke bool
}

// Agent runs turns: it owns the per-session lock, the session usage totals
// and the provider. It is safe for concurrent use.
type Agent struct {
	o       Options
	models  *models // the primary endpoint and its fallbacks (failover.go)
	builder ContextBuilder
	log     *slog.Logger
	locks   keyedMutex
	viewer  memory.TurnReader // nil: a turn's reads are separate (turnview.go)
	// jsonFallback is set once an endpoint rejected native tools (auto protocol).
	jsonFallback atomic.Bool
	prompt       atomic.Pointer[promptMemo] // the last system prompt (promptmemo.go)

	usageMu sync.Mutex
	usage   map[string]memory.Usage
}

// New builds an Agent; zero Options fields take the defaults.
func New(o Options) (*Agent, error) {
	o = o.withDefaults()
	switch o.ToolProtocol {
	case ProtocolAuto, ProtocolNative, ProtocolJSON:
	default:
		return nil, fmt.Errorf("agent: unknown tool protocol %q (use auto, native or json)", o.ToolProtocol)
	}
	a := &Agent{
		o:      o,
		models: newModels(o),
		builder: ContextBuilder{Location: o.Location, Now: o.Now, NotesMaxCount: o.NotesMaxCount, NotesMaxChars: o.NotesMaxChars,
			clock: &clockMemo{}},
		log:    o.Logger,
		usage:  map[string]memory.Usage{},
		viewer: turnReader(o),
	}
	if a.o.Compactor == nil {
		if ns, ok := o.Notes.(NotesStore); ok {
			a.o.Compactor = newSummaryCompactor(a, ns)
		}
	}
	return a, nil
}

// Prompt returns exactly what a turn of req would send before the history:
// the system messages (the stable system prompt first, then the message with
// the chat's notes and conversation summary when there are any) and the
// runtime-context block that would precede the user message. It calls no
// model, does not compact and does not take the session lock (operators use
// it to inspect a chat's prompt: `switchboard prompt --target KEY`).
// req.SessionKey selects the notes; req.Persona, Tools, NoTools and Runtime
// are used as in a turn.
func (a *Agent) Prompt(ctx context.Context, req Request) (system []string, runtime string, err error) {
	persona := a.persona(req.Persona)
	var tools []Tool
	if !req.NoTools {
		tools = available(a.o.Tools.selected(persona.Tools, req.Tools), persona)
	}
	mode := a.mode(tools)
	system = []string{a.builder.SystemPrompt(persona, tools, mode)}
	if req.SessionKey != "" {
		notes, err := a.notesMessage(ctx, req.SessionKey, tools)
		if err != nil {
			return nil, "", err
		}
		if notes != "" {
			system = append(system, notes)
		}
	}
	return system, a.builder.RuntimeBlock(req.Runtime, ""), nil
}

// mode picks how tools are rendered for a turn offering tools.
func (a *Agent) mode(tools []Tool) string {
	switch {
	case len(tools) == 0:
		return renderPlain
	case a.o.ToolProtocol == ProtocolJSON:
		return renderJSON
	case a.o.ToolProtocol == ProtocolAuto && a.jsonFallback.Load():
		return renderJSON
	}
	return renderNative
}

// notesMessage reads the session's notes and renders the notes message ("" if
// there is no notes source or nothing to show).
func (a *Agent) notesMessage(ctx context.Context, sessionKey string, tools []Tool) (string, error) {
	if a.o.Notes == nil {
		return "", nil
	}
	notes, err := a.o.Notes.ListNotes(ctx, sessionKey)
	if err != nil {
		return "", fmt.Errorf("agent: read notes of %s: %w", sessionKey, err)
	}
	return a.builder.NotesMessage(notes, hasTool(tools, MemoryToolName)), nil
}

// Usage is the running token total of a session since the Agent started.
func (a *Agent) Usage(sessionKey string) memory.Usage {
	a.usageMu.Lock()
	defer a.usageMu.Unlock()
	return a.usage[sessionKey]
}

// ProcessDirect runs a turn without a platform message (heartbeat, jobs,
// `switchboard ask`) and returns the whole answer. It takes the same
// per-session lock as chat turns.
func (a *Agent) ProcessDirect(ctx context.Context, sessionKey, text string, opts DirectOptions) (string, error) {
	res, err := a.run(ctx, Request{
		SessionKey: sessionKey, Text: text, Runtime: opts.Runtime, Persona: opts.Persona,
		Tools: opts.Tools, NoTools: opts.NoTools, OnEvent: opts.OnEvent, Admin: opts.Admin, direct: true,
		BillTo: opts.BillTo, TokenBudget: opts.TokenBudget, FilesOf: opts.FilesOf,
	}, CallInfo{JobName: opts.JobName, DeliverTo: opts.DeliverTo})
	if err != nil {
		return res.Text, err
	}
	return res.Text, nil
}

// ProcessMessage runs one chat turn. Turns of one session never interleave
// (a per-session lock); different sessions run concurrently.
//
// On cancellation the work done so far is committed to the session and the
// Result (FinishCanceled) is returned together with an error wrapping
// context.Canceled. On a model failure (FinishAPIError) nothing is committed
// and the error is a *ModelError (see FriendlyError).
func (a *Agent) ProcessMessage(ctx context.Context, req Request) (Result, error) {
	return a.run(ctx, req, CallInfo{})
}

// run runs a turn; job carries JobName and DeliverTo of a job's turn.
func (a *Agent) run(ctx context.Context, req Request, job CallInfo) (Result, error) {
	if req.SessionKey == "" {
		return Result{}, errors.New("agent: request without a session key")
	}
	if err := a.models.primary.eps[0].prov.configured(); err != nil {
		return Result{FinishReason: FinishAPIError}, err
	}
	unlock, err := a.locks.Lock(ctx, req.SessionKey)
	if err != nil {
		return Result{FinishReason: FinishCanceled}, fmt.Errorf("agent: waiting for session %s: %w", req.SessionKey, err)
	}
	defer unlock()

	id := req.TurnID
	if id == "" {
		id = newTurnID()
	}
	pre, err := a.resolvePersona(ctx, &req)
	if err != nil {
		return Result{TurnID: id, FinishReason: FinishAPIError}, err
	}
	persona := a.persona(req.Persona)
	var tools []Tool
	if !req.NoTools {
		tools = available(a.o.Tools.selected(persona.Tools, req.Tools), persona)
	}
	t := &turn{
		a:       a,
		o:       a.o,
		req:     req,
		pre:     pre,
		persona: persona,
		tools:   tools,
		id:      id,
		tr:      newTracker(a.o.Now),
		seen:    map[string]int{},
		started: a.o.Now(),
		chain:   a.models.chainFor(persona),
	}
	if req.TokenBudget > 0 && (t.o.TokenBudget <= 0 || req.TokenBudget < t.o.TokenBudget) {
		t.o.TokenBudget = req.TokenBudget
	}
	t.callInfo = CallInfo{SessionKey: req.SessionKey, Persona: persona.Name, JobName: job.JobName,
		DeliverTo: job.DeliverTo, TurnID: t.id, Skills: persona.Skills, Files: a.newTurnFiles(cmp.Or(req.FilesOf, req.SessionKey))}
	t.runtime = a.builder.RuntimeBlock(req.Runtime, job.JobName)
	if a.o.Gate != nil {
		ctx = withGateCall(ctx, t.gateCall()) // for the summarizer (budget.go)
	}
	return t.execute(ctx)
}

func (a *Agent) persona(name string) Persona {
	if a.o.Personas != nil {
		if p, ok := a.o.Personas.Persona(name); ok {
			return p
		}
		if name != "" {
			a.log.Warn("unknown persona; using the default", slog.String("persona", name))
			if p, ok := a.o.Personas.Persona(""); ok {
				return p
			}
		}
	}
	if name == "" {
		name = "assistant"
	}
	return Persona{Name: name, Identity: DefaultIdentity}
}

func (a *Agent) addUsage(key string, u memory.Usage) {
	a.usageMu.Lock()
	a.usage[key] = a.usage[key].Add(u)
	a.usageMu.Unlock()
}

func newTurnID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
