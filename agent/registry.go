package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	openai "github.com/sashabaranov/go-openai"
)

// toolNameRE with a length check apart: a counted repetition ({1,64}) would
// compile to a program 64 classes long, kept for the process's life.
var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

const maxToolName = 64

// Registry holds the tools the model may be offered, with their compiled
// argument schemas. It is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]registered
}

type registered struct {
	tool   Tool
	schema *jsonschema.Resolved
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{tools: map[string]registered{}} }

// Register adds t. The name must be unique and match ^[a-zA-Z0-9_-]{1,64}$
// (OpenAI's rule), and the schema must compile.
func (r *Registry) Register(t Tool) error {
	name := t.Name()
	if len(name) > maxToolName || !toolNameRE.MatchString(name) {
		return fmt.Errorf("agent: register tool %q: invalid name (letters, digits, _ and -, at most 64)", name)
	}
	raw := t.Schema()
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	sch, err := compileSchema(raw)
	if err != nil {
		return fmt.Errorf("agent: register tool %q: %w", name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[name]; dup {
		return fmt.Errorf("agent: register tool %q: already registered", name)
	}
	r.tools[name] = registered{tool: t, schema: sch}
	return nil
}

// Get returns the tool named name.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.tools[name]
	return e.tool, ok
}

// Names lists the registered tool names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.tools))
	for n := range r.tools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Validate checks args against the tool's schema. The error text is meant
// for the model (it says what is wrong and where).
func (r *Registry) Validate(name string, args json.RawMessage) error {
	r.mu.RLock()
	e, ok := r.tools[name]
	r.mu.RUnlock()
	if !ok {
		return fmt.Errorf("unknown tool %q", name)
	}
	return validateArgs(e.schema, args)
}

// selected returns the tools allowed by the allowlists (nil list = no
// restriction), sorted by name.
func (r *Registry) selected(lists ...[]string) []Tool {
	var out []Tool
	for _, name := range r.Names() {
		ok := true
		for _, l := range lists {
			if l != nil && !AllowedBy(l, name) {
				ok = false
				break
			}
		}
		if ok {
			if t, found := r.Get(name); found {
				out = append(out, t)
			}
		}
	}
	return out
}

// openAITools renders tools for the native protocol.
func openAITools(tools []Tool) []openai.Tool {
	if len(tools) == 0 {
		return nil
	}
	out := make([]openai.Tool, 0, len(tools))
	for _, t := range tools {
		schema := t.Schema()
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name(), Description: t.Description(), Parameters: schema}})
	}
	return out
}

// OwnTimeout is implemented by tools that bound their calls themselves
// with a timeout of their own (exec: exec.timeout, plus the time to copy the
// workspace in and out): CallTimeout, when positive, replaces
// agent.tool_timeout for their calls.
type OwnTimeout interface {
	CallTimeout() time.Duration
}

// toolRun is the outcome of one tool call.
type toolRun struct {
	output   string // observation given to the model (truncated)
	isError  bool
	err      error
	attempts int
	elapsed  time.Duration
}

// runTool calls t with the per-call timeout, retrying only failures that are
// safe to retry (Repeatable tools, or *TemporaryError) and may succeed on
// another try (never a *PermanentError), and truncates the result.
func runTool(ctx context.Context, o Options, t Tool, args json.RawMessage) toolRun {
	start := o.Now()
	repeatable := false
	if rp, ok := t.(Repeatable); ok {
		repeatable = rp.Repeatable()
	}
	timeout := o.ToolTimeout
	if ot, ok := t.(OwnTimeout); ok && ot.CallTimeout() > 0 {
		timeout = ot.CallTimeout()
	}
	var (
		out string
		err error
		n   int
	)
	for n = 1; ; n++ {
		out, err = callOnce(ctx, timeout, t, args)
		if err == nil || ctx.Err() != nil || n > o.ToolRetries {
			break
		}
		var perm *PermanentError
		if errors.As(err, &perm) {
			break // a refusal: the same call can only be refused again
		}
		var temp *TemporaryError
		if !repeatable && !errors.As(err, &temp) {
			break // a tool with side effects is never re-run after an ambiguous failure
		}
		if o.Sleep(ctx, o.ToolRetryDelay) != nil {
			break
		}
	}
	run := toolRun{attempts: n, elapsed: o.Now().Sub(start), err: err}
	if err != nil {
		run.isError = true
		msg := err.Error()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			msg = fmt.Sprintf("the tool did not finish within %s", timeout)
		}
		if n > 1 {
			msg = fmt.Sprintf("%s (after %d attempts)", msg, n)
		}
		run.output = "error: " + msg
	} else {
		run.output = out
	}
	run.output = truncate(run.output, o.ObservationMaxLen)
	return run
}

func callOnce(ctx context.Context, timeout time.Duration, t Tool, args json.RawMessage) (out string, err error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the tool crashed: %v", p)
		}
	}()
	return t.Call(ctx, args)
}

// truncate keeps the first n characters of s and says how much was cut.
func truncate(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + fmt.Sprintf("\n…[truncated: %d more characters not shown]", len(r)-n)
}
