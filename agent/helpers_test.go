package agent

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

const testKey = "sk-test-SECRET-abcdef123456"

var testNow = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)

// sleeps records requested waits without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

type harness struct {
	srv      *fakellm.Server
	agent    *Agent
	sessions *MemorySessions
	sleeps   *sleeps
	reg      *Registry
}

func newHarness(t testing.TB, r fakellm.Responder, mut func(*Options), tools ...Tool) *harness {
	t.Helper()
	h := &harness{srv: fakellm.Start(t, r), sessions: NewMemorySessions(), sleeps: &sleeps{}, reg: NewRegistry()}
	for _, tl := range tools {
		if err := h.reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	o := Options{
		BaseURL: h.srv.URL, APIKey: testKey, Model: "fake-model", HTTPClient: h.srv.HTTPClient(),
		RetryBase: time.Millisecond, RetryMax: 8 * time.Millisecond, ToolRetryDelay: 3 * time.Millisecond,
		Timeout: 5 * time.Second, StreamIdleTimeout: 5 * time.Second, ToolTimeout: 5 * time.Second,
		Sleep: h.sleeps.sleep, Location: time.UTC, Now: func() time.Time { return testNow },
		Sessions: h.sessions, Tools: h.reg,
	}
	if mut != nil {
		mut(&o)
	}
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	h.agent = a
	return h
}

// funcTool is a configurable test tool.
type funcTool struct {
	name       string
	schema     string
	repeatable bool
	fn         func(ctx context.Context, args json.RawMessage) (string, error)

	mu    sync.Mutex
	calls []string
}

func (f *funcTool) Name() string        { return f.name }
func (f *funcTool) Description() string { return "test tool " + f.name }
func (f *funcTool) Schema() json.RawMessage {
	if f.schema == "" {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return json.RawMessage(f.schema)
}
func (f *funcTool) Repeatable() bool { return f.repeatable }
func (f *funcTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	f.mu.Lock()
	f.calls = append(f.calls, string(args))
	f.mu.Unlock()
	return f.fn(ctx, args)
}
func (f *funcTool) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func constTool(name, out string) *funcTool {
	return &funcTool{name: name, fn: func(context.Context, json.RawMessage) (string, error) { return out, nil }}
}

// recorder collects turn events.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) on(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) list() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// visible is the text a streaming consumer would show at the end.
func (r *recorder) visible() string {
	var sb strings.Builder
	for _, e := range r.list() {
		switch e.Kind {
		case EventTextDelta:
			sb.WriteString(e.Text)
		case EventReset:
			sb.Reset()
		}
	}
	return sb.String()
}

func (r *recorder) count(k EventKind) int {
	n := 0
	for _, e := range r.list() {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// allText is every delta ever sent, resets ignored.
func (r *recorder) allText() string {
	var sb strings.Builder
	for _, e := range r.list() {
		if e.Kind == EventTextDelta {
			sb.WriteString(e.Text)
		}
	}
	return sb.String()
}

func call(name, args string) fakellm.ToolCall { return fakellm.ToolCall{Name: name, Arguments: args} }

// toolsThenAnswer calls the given tools (one response each) then answers,
// deciding by the number of tool results already in the request.
func toolsThenAnswer(answer string, steps ...[]fakellm.ToolCall) fakellm.Responder {
	return func(r *fakellm.Request) fakellm.Response {
		done := 0
		for _, m := range r.Body.Messages {
			if m.Role == "assistant" && len(m.ToolCalls) > 0 {
				done++
			}
		}
		if r.HasTools() && done < len(steps) {
			return fakellm.Response{ToolCalls: steps[done]}
		}
		return fakellm.Response{Content: answer}
	}
}
