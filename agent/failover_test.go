package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

const fallbackKey = "sk-fallback-SECRET-987654"

// simClock is a simulated clock tests move by hand.
type simClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *simClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// failoverRig is an agent with a primary fake and one fallback fake.
type failoverRig struct {
	*harness
	fb    *fakellm.Server
	logs  *lockedBuf
	clock *simClock
	calls []ModelCall
	mu    sync.Mutex
}

func newFailoverRig(t *testing.T, primary, fallback fakellm.Responder, mut func(*Options), tools ...Tool) *failoverRig {
	t.Helper()
	r := &failoverRig{fb: fakellm.Start(t, fallback), logs: &lockedBuf{}, clock: &simClock{now: testNow}}
	r.harness = newHarness(t, primary, func(o *Options) {
		o.MaxRetries = 1
		o.Fallbacks = []Endpoint{{BaseURL: r.fb.URL, APIKey: fallbackKey, Model: "fallback-model"}}
		o.Now = r.clock.Now
		o.Logger = slog.New(slog.NewTextHandler(r.logs, nil))
		o.OnModelCall = func(c ModelCall) {
			r.mu.Lock()
			r.calls = append(r.calls, c)
			r.mu.Unlock()
		}
		if mut != nil {
			mut(o)
		}
	}, tools...)
	return r
}

func (r *failoverRig) modelCalls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.calls {
		s := c.Endpoint + "/" + c.Model + "=" + c.Outcome
		if c.From != "" {
			s += "<-" + c.From
		}
		out = append(out, s)
	}
	return out
}

func (r *failoverRig) turn(t *testing.T, text string, rec *recorder) (Result, error) {
	t.Helper()
	req := Request{SessionKey: "s", Text: text}
	if rec != nil {
		req.OnEvent = rec.on
	}
	return r.agent.ProcessMessage(context.Background(), req)
}

// A primary that fails with a transient error after its retries hands the
// turn to the fallback: the user gets the fallback's answer, and the turn
// says which model answered.
func TestFailoverTransient(t *testing.T) {
	for _, tt := range []struct {
		name    string
		primary fakellm.Response
		closed  bool
		timeout time.Duration
	}{
		{name: "connection refused", closed: true},
		{name: "5xx", primary: fakellm.Response{Status: 503}},
		{name: "429", primary: fakellm.Response{Status: 429, RetryAfter: "0"}},
		{name: "timeout", primary: fakellm.Response{Delay: time.Minute}, timeout: 50 * time.Millisecond},
		{name: "cut stream", primary: fakellm.Response{Content: "half an answer from the primary", ChunkSize: 3, CutAfter: 3}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newFailoverRig(t, fakellm.Reply(tt.primary), fakellm.Text("answer from the fallback"), func(o *Options) {
				if tt.timeout > 0 {
					o.Timeout, o.StreamIdleTimeout = tt.timeout, tt.timeout
				}
			})
			if tt.closed {
				r.srv.Close()
			}
			rec := &recorder{}
			res, err := r.turn(t, "hello", rec)
			if err != nil {
				t.Fatalf("turn failed: %v", err)
			}
			if res.Text != "answer from the fallback" || rec.visible() != "answer from the fallback" {
				t.Fatalf("answer %q, visible %q", res.Text, rec.visible())
			}
			if !tt.closed && r.srv.RequestCount() != 2 { // the primary's own retry first
				t.Errorf("primary asked %d times, want 2", r.srv.RequestCount())
			}
			if got := r.fb.LastRequest(); got == nil || got.Body.Model != "fallback-model" ||
				got.Header.Get("Authorization") != "Bearer "+fallbackKey {
				t.Fatalf("fallback request %+v", got)
			}
			if len(res.Models) != 1 || res.Models[0].Model != "fallback-model" || res.Models[0].Endpoint != "fallback 1" ||
				res.Models[0].Usage != res.Usage {
				t.Errorf("Result.Models = %+v (usage %+v)", res.Models, res.Usage)
			}
			hist, _ := r.sessions.LoadHistory(context.Background(), "s", 10)
			if len(hist) != 2 || hist[1].Content != "answer from the fallback" {
				t.Errorf("history %+v", hist)
			}
			want := []string{"primary/fake-model=failed", "fallback 1/fallback-model=ok<-primary"}
			if got := r.modelCalls(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("model calls %v, want %v", got, want)
			}
			if n := strings.Count(r.logs.String(), "failing over"); n != 1 {
				t.Errorf("%d failover warnings, want 1:\n%s", n, r.logs.String())
			}
			if strings.Contains(r.logs.String(), fallbackKey) || strings.Contains(r.logs.String(), testKey) {
				t.Errorf("a key in the logs:\n%s", r.logs.String())
			}
		})
	}
}

// A permanent refusal (bad key, unknown model) is reported to the user and
// the fallback is not asked: it would hide a mistake the operator must fix.
func TestFailoverPermanentIsReported(t *testing.T) {
	for _, tt := range []struct {
		status int
		kind   string
		reply  string
	}{
		{401, KindAuth, "The model endpoint rejected the API key; the operator needs to check it."},
		{404, KindNotFound, "The configured model or endpoint does not exist (HTTP 404); the operator needs to check llm.model and llm.base_url."},
	} {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			r := newFailoverRig(t, fakellm.Reply(fakellm.Response{Status: tt.status}), fakellm.Text("should not be asked"), nil)
			_, err := r.turn(t, "hello", nil)
			var me *ModelError
			if !errors.As(err, &me) || me.Kind != tt.kind {
				t.Fatalf("want a %s ModelError, got %v", tt.kind, err)
			}
			if got := FriendlyError(err); !strings.HasPrefix(got, tt.reply) {
				t.Errorf("reply %q", got)
			}
			if n := r.fb.RequestCount(); n != 0 {
				t.Errorf("fallback asked %d times", n)
			}
			if got := r.modelCalls(); fmt.Sprint(got) != "[primary/fake-model=refused]" {
				t.Errorf("model calls %v", got)
			}
			if st := r.agent.Endpoints(); st[0].State != StateUp {
				t.Errorf("a refusal marked the primary %q", st[0].State)
			}
		})
	}
}

// The primary answers the tool call, then fails: the rest of the exchange
// (tool result in) goes to the fallback, and the turn records both models.
// Once the fallback answered, the turn stays on it even when the primary
// is not cooling down.
func TestFailoverMidTurnToolExchange(t *testing.T) {
	var mu sync.Mutex
	primaryOK := true
	primary := func(req *fakellm.Request) fakellm.Response {
		mu.Lock()
		defer mu.Unlock()
		if !primaryOK {
			return fakellm.Response{Status: 502}
		}
		return toolsThenAnswer("primary answer", []fakellm.ToolCall{call("lookup", `{}`)}, []fakellm.ToolCall{call("lookup", `{"again":1}`)})(req)
	}
	tool := constTool("lookup", "42")
	tool.fn = func(context.Context, json.RawMessage) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		primaryOK = false
		return "42", nil
	}
	r := newFailoverRig(t, primary,
		toolsThenAnswer("the answer is 42", nil, []fakellm.ToolCall{call("lookup", `{"again":1}`)}),
		func(o *Options) { o.FailoverCooldown = -1 }, tool)
	res, err := r.turn(t, "what is it?", nil)
	if err != nil || res.Text != "the answer is 42" {
		t.Fatalf("answer %q, err %v", res.Text, err)
	}
	fbReqs := r.fb.Requests()
	if len(fbReqs) != 2 {
		t.Fatalf("fallback asked %d times, want 2 (the turn stays on it)", len(fbReqs))
	}
	if tr := fbReqs[0].ToolResults(); len(tr) != 1 || !strings.Contains(fakellm.MessageText(tr[0]), "42") {
		t.Errorf("the fallback did not get the primary's tool exchange: %+v", tr)
	}
	if n := r.srv.RequestCount(); n != 3 { // the tool call, then the failed step and its retry
		t.Errorf("primary asked %d times, want 3", n)
	}
	if len(res.Models) != 2 || res.Models[0].Endpoint != "primary" || res.Models[0].Model != "fake-model" ||
		res.Models[1].Endpoint != "fallback 1" || res.Models[1].Model != "fallback-model" ||
		res.Models[0].Usage.Add(res.Models[1].Usage) != res.Usage {
		t.Errorf("Result.Models = %+v", res.Models)
	}
	var trace []string
	for _, e := range res.Trace {
		if e.Kind == TraceModel && e.Error == "" {
			trace = append(trace, e.Observation[strings.Index(e.Observation, "model="):])
		}
	}
	want := `[model=fake-model endpoint="primary" model=fallback-model endpoint="fallback 1" model=fallback-model endpoint="fallback 1"]`
	if fmt.Sprint(trace) != want {
		t.Errorf("trace models %v", trace)
	}
}

// A primary that just failed is skipped by the next turns for the
// cool-down, then asked again; one WARN when failing over, one INFO when
// the primary answers again, and Endpoints tells the state.
func TestFailoverCooldown(t *testing.T) {
	var mu sync.Mutex
	down := true
	primary := func(*fakellm.Request) fakellm.Response {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return fakellm.Response{Status: 500}
		}
		return fakellm.Response{Content: "primary is back"}
	}
	r := newFailoverRig(t, primary, fakellm.Text("fallback here"), nil)
	state := func() string {
		var s []string
		for _, e := range r.agent.Endpoints() {
			s = append(s, e.Name+"="+e.State)
		}
		return strings.Join(s, ",")
	}
	if got := state(); got != "primary=up,fallback 1=up" {
		t.Fatalf("state before %s", got)
	}
	steps := []struct {
		after     time.Duration
		up        bool
		answer    string
		primaryN  int
		stateThen string
	}{
		{0, false, "fallback here", 2, "primary=cooling down,fallback 1=up"},
		{10 * time.Second, false, "fallback here", 2, "primary=cooling down,fallback 1=up"},
		{25 * time.Second, true, "primary is back", 3, "primary=up,fallback 1=up"},
		{time.Second, true, "primary is back", 4, "primary=up,fallback 1=up"},
	}
	for i, st := range steps {
		r.clock.Add(st.after)
		mu.Lock()
		down = !st.up
		mu.Unlock()
		if i == 2 {
			if got := state(); got != "primary=down,fallback 1=up" {
				t.Errorf("after the cool-down: %s", got)
			}
		}
		res, err := r.turn(t, fmt.Sprint("message ", i), nil)
		if err != nil || res.Text != st.answer {
			t.Fatalf("turn %d: %q, %v", i, res.Text, err)
		}
		if n := r.srv.RequestCount(); n != st.primaryN {
			t.Errorf("turn %d: primary asked %d times in all, want %d", i, n, st.primaryN)
		}
		if got := state(); got != st.stateThen {
			t.Errorf("turn %d: state %s, want %s", i, got, st.stateThen)
		}
	}
	logs := r.logs.String()
	if strings.Count(logs, "failing over") != 1 || strings.Count(logs, "answers again") != 1 {
		t.Errorf("want one WARN and one INFO:\n%s", logs)
	}
	st := r.agent.Endpoints()
	if st[0].LastModel != "fake-model" || !st[0].LastAnswered.Equal(r.clock.Now()) || st[1].LastModel != "fallback-model" {
		t.Errorf("endpoints %+v", st)
	}
}

// A persona's model is asked of the primary; its own fallbacks replace
// llm.fallbacks, a fallback without a key using the configured endpoint's
// key for the same base URL (persona files hold no keys).
func TestFailoverPersonaModel(t *testing.T) {
	ps := personas{"poet": {Name: "poet", Identity: "x", Model: "poet-model"}}
	r := newFailoverRig(t, fakellm.Reply(fakellm.Response{Status: 503}), fakellm.Echo(), func(o *Options) {
		o.Personas, o.FailoverCooldown = ps, -1 // every turn asks the primary first
	})
	ps["bard"] = Persona{Name: "bard", Identity: "x", Model: "bard-model", Fallbacks: []Endpoint{{BaseURL: r.fb.URL, Model: "bard-fallback"}}}
	for _, tt := range []struct{ persona, primaryModel, fbModel, endpoint string }{
		{"poet", "poet-model", "fallback-model", "fallback 1"},
		{"bard", "bard-model", "bard-fallback", "bard fallback 1"},
	} {
		res, err := r.agent.ProcessMessage(context.Background(), Request{SessionKey: tt.persona, Persona: tt.persona, Text: "hi"})
		if err != nil {
			t.Fatalf("%s: %v", tt.persona, err)
		}
		if got := r.srv.LastRequest().Body.Model; got != tt.primaryModel {
			t.Errorf("%s: primary asked for %q", tt.persona, got)
		}
		fb := r.fb.LastRequest()
		if fb.Body.Model != tt.fbModel || fb.Header.Get("Authorization") != "Bearer "+fallbackKey {
			t.Errorf("%s: fallback asked for %q with %q", tt.persona, fb.Body.Model, fb.Header.Get("Authorization"))
		}
		if len(res.Models) != 1 || res.Models[0].Endpoint != tt.endpoint || res.Models[0].Model != tt.fbModel {
			t.Errorf("%s: models %+v", tt.persona, res.Models)
		}
	}
}

// Every endpoint failing transiently: the user is told the model is not
// answering, text streamed on the way was taken back, and the turn commits
// nothing.
func TestFailoverAllDown(t *testing.T) {
	r := newFailoverRig(t, fakellm.Reply(fakellm.Response{Content: "partial primary text", CutAfter: 2}),
		fakellm.Reply(fakellm.Response{Status: 503}), nil)
	rec := &recorder{}
	_, err := r.turn(t, "hello", rec)
	var me *ModelError
	if !errors.As(err, &me) || me.Kind != KindUnavailable {
		t.Fatalf("want the last endpoint's error, got %v", err)
	}
	if rec.visible() != "" {
		t.Errorf("visible text %q", rec.visible())
	}
	if hist, _ := r.sessions.LoadHistory(context.Background(), "s", 10); len(hist) != 0 {
		t.Errorf("history %+v", hist)
	}
	if opts := fmt.Sprintf("%v %#v %+v", r.agent.o, r.agent.o, r.agent.o.Fallbacks); strings.Contains(opts, fallbackKey) {
		t.Errorf("options print the fallback key: %s", opts)
	}
}
