package hub_test

import (
	"context"
	"fmt"
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

// fakeClaims is the cluster's session claims in memory: one holder per
// session; expire plays a replica whose claims lapsed (it died or could not
// renew). Announce wakes the other replicas, as NOTIFY does.
type fakeClaims struct {
	mu       sync.Mutex
	holders  map[string]*fakeHold
	replicas map[string]*hub.Handler
}

type fakeHold struct {
	owner  string
	cancel context.CancelFunc
}

type replicaClaims struct {
	f    *fakeClaims
	name string
}

func (r replicaClaims) TryClaim(_ context.Context, s string) (context.Context, func(), bool, error) {
	f := r.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.holders[s] != nil {
		return nil, nil, false, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &fakeHold{owner: r.name, cancel: cancel}
	f.holders[s] = h
	release := func() {
		f.mu.Lock()
		if f.holders[s] == h {
			delete(f.holders, s)
		}
		f.mu.Unlock()
		cancel()
	}
	return ctx, release, true, nil
}

func (r replicaClaims) Announce(_ context.Context, s string) {
	r.f.mu.Lock()
	var others []*hub.Handler
	for name, h := range r.f.replicas {
		if name != r.name {
			others = append(others, h)
		}
	}
	r.f.mu.Unlock()
	for _, h := range others {
		h.Wake(s)
	}
}

// expire drops every claim owner holds, as when its lease ran out.
func (f *fakeClaims) expire(owner string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s, h := range f.holders {
		if h.owner == owner {
			h.cancel()
			delete(f.holders, s)
		}
	}
}

// cluster is two replicas (handlers with their own agents) on one store and
// one platform.
type cluster struct {
	store  *bolt.Store
	claims *fakeClaims
	plat   *console.Memory
	rep    map[string]*hub.Handler
}

func newCluster(t *testing.T, llm *fakellm.Server, names ...string) *cluster {
	t.Helper()
	return newClusterWith(t, llm, nil, names...)
}

// newClusterWith is newCluster whose agents offer tool, which needs /approve.
func newClusterWith(t *testing.T, llm *fakellm.Server, tool agent.Tool, names ...string) *cluster {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "switchboard.db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{store: st, claims: &fakeClaims{holders: map[string]*fakeHold{}, replicas: map[string]*hub.Handler{}},
		plat: console.NewMemory("memory", 4000, 5*time.Millisecond), rep: map[string]*hub.Handler{}}
	for _, name := range names {
		opts := agent.Options{BaseURL: llm.URL, APIKey: "k", Model: "m", MaxRetries: 1,
			RetryBase: time.Millisecond, Timeout: 5 * time.Second, HTTPClient: llm.HTTPClient(), Sessions: st}
		if tool != nil {
			reg := agent.NewRegistry()
			if err := reg.Register(tool); err != nil {
				t.Fatal(err)
			}
			opts.Tools, opts.Approve = reg, agent.ApprovalPolicy{Require: []string{tool.Name()}}.Func()
		}
		ag, err := agent.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		h := hub.NewHandler(hub.HandlerOptions{Store: st, Agent: ag, Access: openAccess(),
			Claims:   replicaClaims{f: c.claims, name: name},
			Outbound: outbound.New(st, outbound.Options{BaseDelay: time.Millisecond})})
		h.Register(plainChannel{c.plat})
		c.rep[name] = h
		c.claims.replicas[name] = h
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		for _, h := range c.rep {
			h.Close(ctx)
		}
		_ = st.Close()
	})
	return c
}

func (c *cluster) say(t *testing.T, replica, id, text string) {
	t.Helper()
	msg := channels.Message{Channel: "memory", ChatID: "c1", MessageID: id, Sender: channels.Sender{ID: "u1", Name: "U"},
		Text: text, Direct: true, Time: time.Now()}
	if err := c.rep[replica].Handle(context.Background(), msg); err != nil {
		t.Fatalf("handle %s on %s: %v", id, replica, err)
	}
}

// Issue 18: messages of one chat accepted by different replicas run one turn
// at a time cluster-wide, in order, each answered once.
func TestClaimsOneTurnPerSessionAcrossReplicas(t *testing.T) {
	var mu sync.Mutex
	inflight, maxSeen := 0, 0
	var asked []string
	llm := fakellm.Start(t, func(req *fakellm.Request) fakellm.Response {
		mu.Lock()
		inflight++
		maxSeen = max(maxSeen, inflight)
		asked = append(asked, req.LastUserText())
		mu.Unlock()
		time.Sleep(3 * time.Millisecond)
		mu.Lock()
		inflight--
		mu.Unlock()
		return fakellm.Response{Content: "ok: " + fakellm.StripRuntimeContext(req.LastUserText())}
	})
	c := newCluster(t, llm, "a", "b")
	for i := 1; i <= 8; i++ {
		rep := "a"
		if i%2 == 0 {
			rep = "b"
		}
		c.say(t, rep, fmt.Sprintf("m%d", i), fmt.Sprintf("question %d", i))
	}
	waitFor(t, "every message to be answered", func() bool {
		p, err := c.store.InboxPending(context.Background())
		return err == nil && len(p) == 0
	})
	mu.Lock()
	defer mu.Unlock()
	if maxSeen != 1 {
		t.Errorf("%d turns of one chat ran at once across the replicas, want 1", maxSeen)
	}
	all := strings.Join(asked, "\n")
	last := -1
	for i := 1; i <= 8; i++ {
		q := fmt.Sprintf("question %d", i)
		if n := strings.Count(all, q); n != 1 {
			t.Errorf("%q reached the model %d times, want once (asked: %q)", q, n, asked)
		}
		if at := strings.Index(all, q); at < last {
			t.Errorf("%q was asked before an earlier message", q)
		} else {
			last = at
		}
	}
	sent := c.plat.Sent("memory:c1")
	if len(sent) != len(asked) {
		t.Errorf("%d answers on the platform for %d turns: %+v", len(sent), len(asked), sent)
	}
}

// Issue 18: a replica that loses a session's claim mid-turn (it died, or
// could not renew) stops; another replica's sweep takes the session over and
// answers the message once.
func TestClaimsTakeoverAfterTheHolderLosesItsClaim(t *testing.T) {
	g := newGate(func(req *fakellm.Request) fakellm.Response {
		return fakellm.Response{Content: "answered: " + fakellm.StripRuntimeContext(req.LastUserText())}
	})
	llm := fakellm.Start(t, g.responder)
	c := newCluster(t, llm, "a", "b")
	c.claims.mu.Lock()
	delete(c.claims.replicas, "b") // b hears no NOTIFY: only its sweep finds the session
	c.claims.mu.Unlock()
	c.say(t, "a", "m1", "hello")
	if got := g.waitArrived(t); !strings.Contains(got, "hello") {
		t.Fatalf("model asked %q", got)
	}
	if err := c.rep["b"].Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if n := llm.RequestCount(); n != 1 {
		t.Fatalf("%d model requests while a holds the claim, want 1", n)
	}
	c.claims.expire("a") // a's turn is canceled: its request ends unanswered
	if err := c.rep["b"].Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.waitArrived(t) // b runs the turn again
	g.release <- struct{}{}
	g.release <- struct{}{}
	c.plat.WaitSent(t, "memory:c1", 1, wait)
	waitFor(t, "the inbox to be cleared", func() bool {
		p, err := c.store.InboxPending(context.Background())
		return err == nil && len(p) == 0
	})
	time.Sleep(20 * time.Millisecond)
	if sent := c.plat.Sent("memory:c1"); len(sent) != 1 || !strings.Contains(sent[0].Text, "answered: hello") {
		t.Fatalf("platform got %+v, want the answer once", sent)
	}
}

// Issue 18: a turn on replica a waits for /approve; the user's /approve
// reaches replica b (Slack spreads events over the replicas' connections),
// which stores and announces it; a answers it beside its queue and the tool
// runs once — not "Nothing is waiting for approval here." from b.
func TestClaimsApprovalReachesTheReplicaWhoseTurnWaits(t *testing.T) {
	tool := &sideEffectTool{name: "delete_file"}
	llm := fakellm.Start(t, approvalLLM("delete_file", `{"path": "/tmp/x"}`))
	c := newClusterWith(t, llm, tool, "a", "b")
	c.say(t, "a", "m1", "delete it")
	c.plat.WaitFor(t, "memory:c1", wait, "the approval request", func(s []console.Sent) bool {
		return len(s) > 0 && strings.Contains(s[0].Text, "Approval needed")
	})
	c.say(t, "b", "m2", "/approve")
	c.plat.WaitFor(t, "memory:c1", wait, "the approval to be confirmed and the turn to finish", func(s []console.Sent) bool {
		return len(s) >= 3
	})
	waitFor(t, "the inbox to be cleared", func() bool {
		p, err := c.store.InboxPending(context.Background())
		return err == nil && len(p) == 0
	})
	time.Sleep(30 * time.Millisecond)
	var texts []string
	for _, m := range c.plat.Sent("memory:c1") {
		texts = append(texts, m.Text)
	}
	all := strings.Join(texts, "\n")
	if tool.count() != 1 || !strings.Contains(all, "Approved") || strings.Contains(all, "Nothing is waiting") {
		t.Fatalf("tool ran %d times; chat: %q", tool.count(), texts)
	}
}

// Issue 18: /stop accepted by replica b cancels the turn running on a.
func TestClaimsStopOnAnotherReplicaCancelsTheTurn(t *testing.T) {
	g := newGate(func(req *fakellm.Request) fakellm.Response {
		return fakellm.Response{Content: "late answer"}
	})
	llm := fakellm.Start(t, g.responder)
	c := newCluster(t, llm, "a", "b")
	c.say(t, "a", "m1", "long question")
	g.waitArrived(t)
	c.say(t, "b", "m2", "/stop")
	waitFor(t, "the inbox to be cleared", func() bool {
		p, err := c.store.InboxPending(context.Background())
		return err == nil && len(p) == 0
	})
	g.release <- struct{}{}
	time.Sleep(30 * time.Millisecond)
	for _, m := range c.plat.Sent("memory:c1") {
		if strings.Contains(m.Text, "late answer") {
			t.Fatalf("the stopped turn's answer was delivered: %+v", c.plat.Sent("memory:c1"))
		}
	}
}

// Issue 18: two messages of a chat reach two replicas and are accepted the
// other way round; the claimed session answers them in the platform's order
// (their timestamps), not in the order of acceptance.
func TestClaimsAnswerInThePlatformsOrder(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	llm := fakellm.Start(t, func(req *fakellm.Request) fakellm.Response {
		mu.Lock()
		asked = append(asked, fakellm.StripRuntimeContext(req.LastUserText()))
		mu.Unlock()
		return fakellm.Response{Content: "ok"}
	})
	c := newCluster(t, llm, "a", "b")
	// A third replica holds the session's claim while both are accepted.
	other := replicaClaims{f: c.claims, name: "c"}
	if _, _, ok, _ := other.TryClaim(context.Background(), "memory:c1"); !ok {
		t.Fatal("could not hold the claim")
	}
	t0 := time.Now()
	for _, m := range []struct {
		replica, id, text string
		at                time.Time
	}{{"b", "m2", "second", t0.Add(time.Second)}, {"a", "m1", "first", t0}} {
		msg := channels.Message{Channel: "memory", ChatID: "c1", MessageID: m.id, Sender: channels.Sender{ID: "u1", Name: "U"},
			Text: m.text, Direct: true, Time: m.at}
		if err := c.rep[m.replica].Handle(context.Background(), msg); err != nil {
			t.Fatal(err)
		}
	}
	c.claims.expire("c")
	if err := c.rep["a"].Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both messages to be answered", func() bool {
		p, err := c.store.InboxPending(context.Background())
		return err == nil && len(p) == 0
	})
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(asked, "\n")
	if i, j := strings.Index(all, "first"), strings.Index(all, "second"); i < 0 || j < 0 || j < i {
		t.Fatalf("the model was asked %q: want the earlier message first", asked)
	}
}
