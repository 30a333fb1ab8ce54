package hub_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// wait bounds every wait for something the test caused: a hang
// detector, not a performance bound (milliseconds on a quiet machine,
// seconds on a loaded one).
const wait = time.Minute

// rig is a handler wired to a real BoltDB store, the real agent and the fake
// LLM, with an in-memory channel standing in for a platform.
type rig struct {
	t      *testing.T
	dir    string
	llm    *fakellm.Server
	store  *bolt.Store
	agent  *agent.Agent
	h      *hub.Handler
	ch     *console.Memory
	access channels.AccessPolicy
	closed bool
}

func openAccess() channels.AccessPolicy {
	return channels.AccessPolicy{Mode: channels.AccessOpen, Groups: channels.GroupsMention}
}

func newRig(t *testing.T, llm *fakellm.Server, access channels.AccessPolicy) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir(), llm: llm, access: access}
	r.start()
	return r
}

// start opens the store and builds agent, handler and channel (again after restart).
func (r *rig) start() {
	r.t.Helper()
	st, err := bolt.Open(filepath.Join(r.dir, "switchboard.db"), memory.Options{NoSync: true})
	if err != nil {
		r.t.Fatalf("open store: %v", err)
	}
	r.store = st
	ag, err := agent.New(agent.Options{
		BaseURL: r.llm.URL, APIKey: "test-key", Model: "fake-model",
		MaxRetries: 2, RetryBase: time.Millisecond, RetryMax: 2 * time.Millisecond,
		Timeout: 5 * time.Second, HTTPClient: r.llm.HTTPClient(), Sessions: st,
	})
	if err != nil {
		r.t.Fatalf("agent: %v", err)
	}
	r.agent = ag
	r.ch = console.NewMemory("memory", 4000, 5*time.Millisecond)
	r.h = hub.NewHandler(hub.HandlerOptions{
		Store: st, Agent: ag, Access: r.access,
		Outbound: outbound.New(st, outbound.Options{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}),
	})
	r.h.Register(r.ch)
	r.ch.Attach(r.h)
	r.closed = false
	r.t.Cleanup(r.stop)
}

// stop shuts the handler down gracefully and closes the store.
func (r *rig) stop() {
	if r.closed {
		return
	}
	r.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	r.h.Close(ctx)
	if err := r.store.Close(); err != nil {
		r.t.Errorf("close store: %v", err)
	}
}

// restart simulates a daemon restart on the same data directory.
func (r *rig) restart() {
	r.t.Helper()
	r.stop()
	r.start()
	if _, err := r.h.Replay(context.Background()); err != nil {
		r.t.Fatalf("replay: %v", err)
	}
}

func (r *rig) say(chat, user, text string, opts ...func(*channels.Message)) channels.Message {
	r.t.Helper()
	msg := channels.Message{ChatID: chat, Sender: channels.Sender{ID: user, Name: strings.ToUpper(user[:1]) + user[1:]},
		Text: text, Direct: true}
	for _, o := range opts {
		o(&msg)
	}
	if err := r.ch.Say(context.Background(), msg); err != nil {
		r.t.Fatalf("say %q: %v", text, err)
	}
	return msg
}

func withID(id string) func(*channels.Message) { return func(m *channels.Message) { m.MessageID = id } }
func inGroup(mentioned bool) func(*channels.Message) {
	return func(m *channels.Message) { m.Direct = false; m.Mentioned = mentioned }
}

// gate is a responder that blocks each request until released, recording
// concurrency, so tests control exactly when a turn ends.
type gate struct {
	mu       sync.Mutex
	inflight int
	maxSeen  int
	arrived  chan string
	release  chan struct{}
	answer   func(*fakellm.Request) fakellm.Response
}

func newGate(answer func(*fakellm.Request) fakellm.Response) *gate {
	return &gate{arrived: make(chan string, 100), release: make(chan struct{}, 100), answer: answer}
}

func (g *gate) responder(req *fakellm.Request) fakellm.Response {
	g.mu.Lock()
	g.inflight++
	g.maxSeen = max(g.maxSeen, g.inflight)
	g.mu.Unlock()
	g.arrived <- req.LastUserText()
	<-g.release
	g.mu.Lock()
	g.inflight--
	g.mu.Unlock()
	return g.answer(req)
}

func (g *gate) waitArrived(t *testing.T) string {
	t.Helper()
	select {
	case s := <-g.arrived:
		return s
	case <-time.After(wait):
		t.Fatal("timed out waiting for a model request")
	}
	return ""
}
