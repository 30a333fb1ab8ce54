package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// clock is a settable simulated clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// rig is a real BoltDB store at a path that can be reopened ("restart").
type rig struct {
	t     *testing.T
	path  string
	clk   *clock
	store memory.Store
}

func newRig(t *testing.T, start time.Time) *rig {
	t.Helper()
	r := &rig{t: t, path: filepath.Join(t.TempDir(), "switchboard.db"), clk: newClock(start)}
	r.open()
	return r
}

func (r *rig) open() {
	r.t.Helper()
	s, err := bolt.Open(r.path, memory.Options{Now: r.clk.Now, NoSync: true, BatchDelay: time.Millisecond})
	if err != nil {
		r.t.Fatalf("open store: %v", err)
	}
	r.store = s
	r.t.Cleanup(func() { _ = s.Close() })
}

// restart closes the store and opens it again, as a daemon restart does.
func (r *rig) restart() {
	r.t.Helper()
	if err := r.store.Close(); err != nil {
		r.t.Fatalf("close store: %v", err)
	}
	r.open()
}

// userSaid commits a user turn to session key at time at.
func (r *rig) userSaid(key, name, text string, at time.Time) {
	r.t.Helper()
	err := r.store.AppendTurn(context.Background(), key, memory.Turn{ID: fmt.Sprintf("u-%d", at.UnixNano()),
		Messages: []memory.Message{
			{Role: memory.RoleUser, Name: name, Content: text, Time: at},
			{Role: memory.RoleAssistant, Content: "noted: " + text, Time: at},
		}, Started: at, Ended: at, FinishReason: "final", Answer: "noted: " + text})
	if err != nil {
		r.t.Fatalf("append turn: %v", err)
	}
}

type directCall struct {
	Session string
	Text    string
	Opts    agent.DirectOptions
}

// fakeDirecter records ProcessDirect calls and answers with answer.
type fakeDirecter struct {
	mu     sync.Mutex
	calls  []directCall
	answer func(ctx context.Context, c directCall) (string, error)
}

func (f *fakeDirecter) ProcessDirect(ctx context.Context, key, text string, opts agent.DirectOptions) (string, error) {
	c := directCall{Session: key, Text: text, Opts: opts}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	answer := f.answer
	f.mu.Unlock()
	if answer == nil {
		return `{"action":"greet","message":"Hello there!"}`, nil
	}
	return answer(ctx, c)
}

func (f *fakeDirecter) Calls() []directCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]directCall(nil), f.calls...)
}

type delivery struct {
	Target string
	TurnID string
	Text   string
	At     time.Time
	// Purpose is what the delivery's context carried (channels.PurposeOf).
	Purpose channels.Purpose
}

// fakeOut records deliveries and fails targets listed in fail.
type fakeOut struct {
	mu   sync.Mutex
	clk  *clock
	sent []delivery
	fail map[string]error
	n    int
	// notify, when set, receives every successful delivery.
	notify chan delivery
}

func newFakeOut(clk *clock) *fakeOut { return &fakeOut{clk: clk, fail: map[string]error{}} }

func (f *fakeOut) Deliver(ctx context.Context, target channels.Target, turnID, text string) ([]string, error) {
	f.mu.Lock()
	if err := f.fail[target.String()]; err != nil {
		f.mu.Unlock()
		return nil, err
	}
	f.n++
	d := delivery{Target: target.String(), TurnID: turnID, Text: text, Purpose: channels.PurposeOf(ctx)}
	if f.clk != nil {
		d.At = f.clk.Now()
	}
	f.sent = append(f.sent, d)
	id := fmt.Sprintf("m%d", f.n)
	notify := f.notify
	f.mu.Unlock()
	if notify != nil {
		notify <- d
	}
	return []string{id}, nil
}

func (f *fakeOut) setFail(target string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.fail, target)
		return
	}
	f.fail[target] = err
}

func (f *fakeOut) Sent() []delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]delivery(nil), f.sent...)
}

type fakeBusy struct {
	mu   sync.Mutex
	busy map[string]bool
}

func (b *fakeBusy) Busy(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.busy[key]
}

func (b *fakeBusy) set(key string, v bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.busy == nil {
		b.busy = map[string]bool{}
	}
	b.busy[key] = v
}

var errPlatformDown = errors.New("temporary: 502 bad gateway")

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return loc
}
