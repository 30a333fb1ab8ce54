package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
)

func TestCancelMidStreamKeepsPartialText(t *testing.T) {
	h := newHarness(t, fakellm.Queue(fakellm.Response{Content: "The answer is forty", ChunkSize: 4, StallAfter: 3}), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{}
	res, err := h.agent.ProcessMessage(ctx, Request{SessionKey: "s", Text: "x", Sources: []uint64{3}, OnEvent: func(e Event) {
		rec.on(e)
		if e.Kind == EventTextDelta && strings.Contains(rec.allText(), "answ") {
			cancel() // the user hits /stop while the answer streams
		}
	}})
	if !errors.Is(err, context.Canceled) || res.FinishReason != FinishCanceled || FriendlyError(err) != "Stopped." {
		t.Fatalf("err %v finish %q", err, res.FinishReason)
	}
	if res.Text != "The answ" {
		t.Fatalf("partial %q", res.Text)
	}
	turns := h.sessions.Turns("s")
	if len(turns) != 1 || turns[0].FinishReason != "canceled" || len(turns[0].Messages) != 2 ||
		turns[0].Messages[1].Content != "The answ" || len(turns[0].Sources) != 0 {
		t.Fatalf("committed %+v", turns)
	}
	if h.srv.RequestCount() != 1 {
		t.Fatal("a canceled call must not be retried")
	}
}

func TestCancelMidToolKeepsCallAndResult(t *testing.T) {
	started := make(chan struct{})
	block := &funcTool{name: "block", fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	}}
	done := constTool("done", "ok")
	h := newHarness(t, toolsThenAnswer("never", []fakellm.ToolCall{call("done", `{}`)}, []fakellm.ToolCall{call("block", `{}`)}), nil, block, done)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	res, err := h.agent.ProcessMessage(ctx, Request{SessionKey: "s", Text: "x"})
	if !errors.Is(err, context.Canceled) || res.FinishReason != FinishCanceled {
		t.Fatalf("err %v finish %q", err, res.FinishReason)
	}
	msgs := h.sessions.Turns("s")[0].Messages
	// user, assistant(done), tool(ok), assistant(block), tool(canceled)
	if len(msgs) != 5 || msgs[2].Content != "ok" || msgs[4].Content != "error: canceled before the tool finished" ||
		msgs[4].ToolCallID != msgs[3].ToolCalls[0].ID {
		t.Fatalf("committed %+v", msgs)
	}
	// The next turn's history is valid: every call has its result.
	h.srv.SetResponder(fakellm.Text("next"))
	if _, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "again"}); err != nil {
		t.Fatal(err)
	}
	if n := len(h.srv.LastRequest().ToolResults()); n != 2 {
		t.Fatalf("history tool results %d", n)
	}
}

func TestTurnTimeoutGetsClosingAnswer(t *testing.T) {
	slow := &funcTool{name: "slow", fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}}
	h := newHarness(t, func(r *fakellm.Request) fakellm.Response {
		if !r.HasTools() {
			return fakellm.Response{Content: "Partial: I ran out of time."}
		}
		return fakellm.Response{ToolCalls: []fakellm.ToolCall{call("slow", `{}`)}}
	}, func(o *Options) { o.TurnTimeout = time.Second }, slow) // 250ms of it kept for the closing answer
	res, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != FinishBudget || res.Text != "Partial: I ran out of time." {
		t.Fatalf("%+v", res)
	}
	if !strings.Contains(h.srv.LastRequest().LastMessage().Content, "time limit of this turn") {
		t.Fatal("closing note missing")
	}
}

func TestSessionLock(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan string, 4)
	gate := &funcTool{name: "gate", fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
		ci, _ := CallInfoFrom(ctx)
		entered <- ci.SessionKey
		select {
		case <-release:
			return "opened", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}}
	// First request of a session calls the gate; later ones answer with the user text.
	h := newHarness(t, func(r *fakellm.Request) fakellm.Response {
		if r.LastUserText() == "first" && len(r.ToolResults()) == 0 {
			return fakellm.Response{ToolCalls: []fakellm.ToolCall{call("gate", `{}`)}}
		}
		return fakellm.Response{Content: "re: " + r.LastUserText()}
	}, nil, gate)

	var wg sync.WaitGroup
	results := make(chan Result, 3)
	run := func(key, text string) {
		defer wg.Done()
		res, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: key, Text: text})
		if err != nil {
			t.Error(err)
		}
		results <- res
	}
	wg.Add(1)
	go run("chat:A", "first")
	if got := <-entered; got != "chat:A" {
		t.Fatalf("entered %q", got)
	}
	before := h.srv.RequestCount()
	wg.Add(1)
	go run("chat:A", "second") // must wait for the first turn of chat:A
	// A different session runs to completion while chat:A is blocked.
	other, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "chat:B", Text: "hello"})
	if err != nil || other.Text != "re: hello" {
		t.Fatalf("other session: %v %q", err, other.Text)
	}
	if got := h.srv.RequestCount(); got != before+1 {
		t.Fatalf("the second turn of chat:A reached the model while the first was running (%d requests)", got-before)
	}
	close(release)
	wg.Wait()
	close(results)
	turns := h.sessions.Turns("chat:A")
	if len(turns) != 2 || turns[0].Answer != "re: first" || turns[1].Answer != "re: second" {
		t.Fatalf("turns %+v", turns)
	}
	// The second turn saw the whole first turn (it ran after it, not interleaved).
	var second *fakellm.Request
	for _, r := range h.srv.Requests() {
		if r.LastUserText() == "second" {
			second = r
		}
	}
	if second == nil || len(second.ToolResults()) != 1 {
		t.Fatalf("second turn's history lacks the first turn")
	}
}

func TestProcessDirect(t *testing.T) {
	var got CallInfo
	info := &funcTool{name: "whoami", fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
		got, _ = CallInfoFrom(ctx)
		return "ok", nil
	}}
	h := newHarness(t, toolsThenAnswer("Good morning!", []fakellm.ToolCall{call("whoami", `{}`)}), nil, info)
	text, err := h.agent.ProcessDirect(context.Background(), "telegram:42", "Write the morning greeting.", DirectOptions{
		JobName: "morning", Runtime: Runtime{ChatType: "job"}})
	if err != nil || text != "Good morning!" {
		t.Fatalf("%q %v", text, err)
	}
	if got.JobName != "morning" || got.SessionKey != "telegram:42" {
		t.Fatalf("call info %+v", got)
	}
	first := h.srv.Requests()[0].LastMessage().Content
	if !strings.Contains(first, "chat type: job\njob: morning\n</runtime-context>") {
		t.Fatalf("runtime block %q", first)
	}
	// NoTools: nothing offered.
	h.srv.SetResponder(fakellm.Echo())
	text, err = h.agent.ProcessDirect(context.Background(), "telegram:42", "ping", DirectOptions{NoTools: true})
	if err != nil || text != "echo: ping" || h.srv.LastRequest().HasTools() {
		t.Fatalf("%q %v", text, err)
	}
	if len(h.sessions.Turns("telegram:42")) != 2 {
		t.Fatal("direct turns are committed to the session")
	}
}

func TestSystemPromptStableAcrossTurns(t *testing.T) {
	clock := testNow
	var mu sync.Mutex
	h := newHarness(t, fakellm.Echo(), func(o *Options) {
		o.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	}, constTool("a", "1"))
	for i, who := range []string{"Ann", "Bob"} {
		mu.Lock()
		clock = testNow.Add(time.Duration(i) * 90 * time.Minute)
		mu.Unlock()
		if _, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "hi",
			Runtime: Runtime{Channel: "slack", SenderName: who}}); err != nil {
			t.Fatal(err)
		}
	}
	r := h.srv.Requests()
	if r[0].SystemPrompt() != r[1].SystemPrompt() {
		t.Fatalf("system prompt changed:\n%q\n%q", r[0].SystemPrompt(), r[1].SystemPrompt())
	}
	if r[0].LastMessage().Content == r[1].LastMessage().Content || !strings.Contains(r[1].LastMessage().Content, "11:30") {
		t.Fatal("runtime context must carry the current time")
	}
	// History holds the user's own words, not the runtime block.
	if hist := r[1].Body.Messages[1].Content; hist != "hi" {
		t.Fatalf("history user message %q", hist)
	}
	if !strings.Contains(r[0].SystemPrompt(), "untrusted data") || strings.Contains(r[0].SystemPrompt(), "2025") {
		t.Fatal("system prompt content")
	}
}

func TestJSONProtocol(t *testing.T) {
	weather := &funcTool{name: "weather", schema: `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`,
		fn: func(_ context.Context, a json.RawMessage) (string, error) { return "18°C in " + string(a), nil }}
	action := "```json\n{\"type\":\"action\",\"tool\":\"weather\",\"args\":{\"city\":\"Oslo\"}}\n```"
	final := `{"type":"final","answer":"It is 18°C in \"Oslo\".\nEnjoy!"}`
	tests := []struct {
		name      string
		script    []fakellm.Response
		wantText  string
		wantErr   error
		wantCalls int
	}{
		{"action then streamed final", []fakellm.Response{{Content: action, ChunkSize: 3}, {Content: final, ChunkSize: 2}},
			"It is 18°C in \"Oslo\".\nEnjoy!", nil, 1},
		{"answer before type is sent whole", []fakellm.Response{{Content: `{"answer":"whole","type":"final"}`}}, "whole", nil, 0},
		{"repair round", []fakellm.Response{{Content: "Sure, I will check the weather."}, {Content: action}, {Content: final}},
			"It is 18°C in \"Oslo\".\nEnjoy!", nil, 1},
		{"second failure ends the turn", []fakellm.Response{{Content: "no json"}, {Content: `{"type":"dance"}`}}, "", ErrToolProtocol, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, fakellm.Queue(tt.script...), func(o *Options) { o.ToolProtocol = ProtocolJSON }, weather)
			weather.calls = nil
			rec := &recorder{}
			res, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "weather in Oslo?", OnEvent: rec.on})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || res.FinishReason != FinishAPIError {
					t.Fatalf("err %v", err)
				}
				if FriendlyError(err) != "The model's reply could not be understood; please try again." {
					t.Fatal(FriendlyError(err))
				}
				if !strings.Contains(err.Error(), `unknown "type" "dance"`) {
					t.Fatalf("cause missing: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != tt.wantText || rec.visible() != tt.wantText || len(weather.Calls()) != tt.wantCalls {
				t.Fatalf("text %q visible %q calls %d", res.Text, rec.visible(), len(weather.Calls()))
			}
			if all := rec.allText(); strings.Contains(all, "{") || strings.Contains(all, `"type"`) {
				t.Fatalf("envelope leaked to the user: %q", all)
			}
			for _, r := range h.srv.Requests() {
				if r.HasTools() || !strings.Contains(r.SystemPrompt(), `{"type":"final","answer":"<your answer`) ||
					!strings.Contains(r.SystemPrompt(), `- weather: test tool weather`) {
					t.Fatal("json protocol request must describe tools in text and offer none natively")
				}
			}
			last := h.srv.LastRequest()
			if tt.wantCalls > 0 {
				obs := last.Body.Messages[len(last.Body.Messages)-1]
				if obs.Role != "user" || !strings.HasPrefix(obs.Content, "Result of weather:\n<tool-output") ||
					!strings.Contains(obs.Content, `18°C in {"city":"Oslo"}`) {
					t.Fatalf("observation %+v", obs)
				}
				// Stored normalized: a tool call plus its result.
				msgs := h.sessions.Turns("s")[0].Messages
				if len(msgs[1].ToolCalls) != 1 || msgs[1].ToolCalls[0].Arguments != `{"city":"Oslo"}` || msgs[2].Role != memory.RoleTool {
					t.Fatalf("stored %+v", msgs)
				}
			}
			if tt.name == "repair round" && !strings.Contains(h.srv.Requests()[1].LastMessage().Content, "could not be used: no JSON object found") {
				t.Fatalf("repair prompt %q", h.srv.Requests()[1].LastMessage().Content)
			}
		})
	}
}

func TestAutoProtocolFallsBackToJSON(t *testing.T) {
	h := newHarness(t, fakellm.RejectTools(func(r *fakellm.Request) fakellm.Response {
		if r.LastUserText() == "second" {
			return fakellm.Response{Content: `{"type":"final","answer":"still json"}`}
		}
		if strings.HasPrefix(r.LastMessage().Content, "Result of now:") {
			return fakellm.Response{Content: `{"type":"final","answer":"It is 10:00."}`}
		}
		return fakellm.Response{Content: `{"type":"action","tool":"now","args":{}}`}
	}), nil, constTool("now", "10:00"))
	res, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "time?"})
	if err != nil || res.Text != "It is 10:00." {
		t.Fatalf("%v %q", err, res.Text)
	}
	reqs := h.srv.Requests()
	if len(reqs) != 3 || !reqs[0].HasTools() || reqs[1].HasTools() {
		t.Fatalf("requests %d", len(reqs))
	}
	// Later turns go straight to json.
	res, err = h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "second"})
	if err != nil || res.Text != "still json" || h.srv.RequestCount() != 4 {
		t.Fatalf("%v %q %d", err, res.Text, h.srv.RequestCount())
	}
	// History is rendered in the text protocol: no tool roles.
	for _, m := range h.srv.LastRequest().Body.Messages {
		if m.Role == "tool" || len(m.ToolCalls) > 0 {
			t.Fatalf("native tool message in json history: %+v", m)
		}
	}
}

func TestSanitizeHistory(t *testing.T) {
	u := memory.Message{Role: memory.RoleUser, Content: "q"}
	a := memory.Message{Role: memory.RoleAssistant, Content: "a"}
	call := func(ids ...string) memory.Message {
		m := memory.Message{Role: memory.RoleAssistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, memory.ToolCall{ID: id, Name: "t"})
		}
		return m
	}
	res := func(id string) memory.Message {
		return memory.Message{Role: memory.RoleTool, ToolCallID: id, Content: "r" + id}
	}
	describe := func(ms []memory.Message) string {
		var s []string
		for _, m := range ms {
			d := m.Role
			for _, tc := range m.ToolCalls {
				d += ":" + tc.ID
			}
			if m.ToolCallID != "" {
				d += ":" + m.ToolCallID
			}
			s = append(s, d)
		}
		return strings.Join(s, " ")
	}
	tests := []struct {
		name string
		in   []memory.Message
		want string
	}{
		{"clean", []memory.Message{u, call("1"), res("1"), a}, "user assistant:1 tool:1 assistant"},
		{"cut in the middle of a turn", []memory.Message{res("1"), a, u, a}, "user assistant"},
		{"call without result", []memory.Message{u, call("1", "2"), res("2"), a}, "user assistant:2 tool:2 assistant"},
		{"dangling call at the end", []memory.Message{u, call("1")}, "user"},
		{"orphan result", []memory.Message{u, res("9"), a}, "user assistant"},
	}
	for _, tt := range tests {
		if got := describe(sanitizeHistory(tt.in)); got != tt.want {
			t.Errorf("%s: got %q want %q", tt.name, got, tt.want)
		}
	}
}

type failingCompactor struct{ calls int }

func (f *failingCompactor) Compact(context.Context, string, []memory.Message) ([]memory.Message, error) {
	f.calls++
	return nil, errors.New("summarizer down")
}

func TestCompactorFailureFallsBackToHistory(t *testing.T) {
	c := &failingCompactor{}
	h := newHarness(t, fakellm.Echo(), func(o *Options) { o.Compactor = c; o.MaxHistory = 3 })
	for _, text := range []string{"one", "two", "three"} {
		if _, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	msgs := h.srv.LastRequest().Body.Messages
	// system, last 3 history messages trimmed to start at a user message (two, echo: two), current
	if c.calls != 3 || len(msgs) != 4 || msgs[1].Content != "two" {
		t.Fatalf("calls %d msgs %+v", c.calls, msgs)
	}
}

func TestRegistryRejectsBadTools(t *testing.T) {
	r := NewRegistry()
	tests := []struct {
		tool Tool
		want string
	}{
		{constTool("bad name!", ""), "invalid name"},
		{&funcTool{name: "s", schema: `{"type": 5}`}, "does not compile"},
		{&funcTool{name: "r", schema: `{"$ref":"http://example.com/x.json"}`}, "does not compile"},
		{&funcTool{name: "j", schema: `{nope`}, "not JSON"},
	}
	for _, tt := range tests {
		if err := r.Register(tt.tool); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v", tt.tool.Name(), err)
		}
	}
	if err := r.Register(constTool("ok", "")); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(constTool("ok", "")); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := New(Options{ToolProtocol: "smoke-signals"}); err == nil {
		t.Fatal("unknown protocol must be refused")
	}
}
