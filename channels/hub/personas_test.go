package hub

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
	"github.com/switchboard-bot/switchboard/personas"
)

func openStore(t *testing.T, path string) *bolt.Store {
	t.Helper()
	st, err := bolt.Open(path, memory.Options{NoSync: true, BatchDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func target(s string) channels.Target {
	t, ok := channels.ParseTarget(s)
	if !ok {
		panic("bad target " + s)
	}
	return t
}

func testSet(t *testing.T, names ...string) *personas.Set {
	t.Helper()
	var ps []personas.Persona
	for _, n := range names {
		ps = append(ps, personas.Persona{Name: n, Identity: "I am " + n + "."})
	}
	s, err := personas.NewSet(ps...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestResolvePrecedence(t *testing.T) {
	all := []string{"assistant", "reporter", "buddy", "pirate", "poet", "chef"}
	tests := []struct {
		name      string
		set       []string          // nil = all
		byTarget  map[string]string // personas.by_target
		byChannel map[string]string // personas.by_channel
		def       string            // personas.default
		chosen    map[string]string // session key → /persona choice
		target    string
		want      string
	}{
		{name: "default only", def: "assistant", target: "telegram:1", want: "assistant"},
		{name: "by_channel beats default", def: "assistant", byChannel: map[string]string{"discord": "buddy"},
			target: "discord:9", want: "buddy"},
		{name: "by_channel is per channel", def: "assistant", byChannel: map[string]string{"discord": "buddy"},
			target: "telegram:9", want: "assistant"},
		{name: "chat choice beats by_channel", def: "assistant", byChannel: map[string]string{"discord": "buddy"},
			chosen: map[string]string{"discord:9": "pirate"}, target: "discord:9", want: "pirate"},
		{name: "by_target beats chat choice", def: "assistant", byChannel: map[string]string{"slack": "buddy"},
			byTarget: map[string]string{"slack:C1": "reporter"}, chosen: map[string]string{"slack:C1": "pirate"},
			target: "slack:C1", want: "reporter"},
		{name: "thread inherits chat by_target", def: "assistant", byTarget: map[string]string{"slack:C1": "reporter"},
			chosen: map[string]string{"slack:C1:123.4": "pirate"}, target: "slack:C1:123.4", want: "reporter"},
		{name: "thread by_target beats chat by_target", byTarget: map[string]string{"slack:C1": "reporter", "slack:C1:123.4": "poet"},
			target: "slack:C1:123.4", want: "poet"},
		{name: "thread inherits chat choice", def: "assistant", chosen: map[string]string{"slack:C1": "chef"},
			target: "slack:C1:123.4", want: "chef"},
		{name: "thread's own choice beats chat choice", chosen: map[string]string{"slack:C1": "chef", "slack:C1:123.4": "poet"},
			target: "slack:C1:123.4", want: "poet"},
		{name: "thread choice does not leak to the chat", def: "assistant", chosen: map[string]string{"slack:C1:123.4": "poet"},
			target: "slack:C1", want: "assistant"},
		{name: "other chat unaffected by a binding", def: "assistant", byTarget: map[string]string{"slack:C1": "reporter"},
			chosen: map[string]string{"slack:C1": "pirate"}, target: "slack:C2", want: "assistant"},
		{name: "deleted persona in by_target falls through", set: []string{"assistant", "buddy"}, def: "assistant",
			byTarget: map[string]string{"slack:C1": "reporter"}, byChannel: map[string]string{"slack": "buddy"},
			target: "slack:C1", want: "buddy"},
		{name: "deleted persona chosen falls through", set: []string{"assistant", "buddy"}, def: "buddy",
			chosen: map[string]string{"telegram:5": "pirate"}, target: "telegram:5", want: "buddy"},
		{name: "missing default uses the set's default", set: []string{"buddy", "assistant"}, def: "ghost",
			target: "telegram:5", want: "assistant"},
		{name: "no default configured uses the set's default", set: []string{"poet", "chef"},
			target: "telegram:5", want: "chef"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st := openStore(t, filepath.Join(t.TempDir(), "s.db"))
			names := tc.set
			if names == nil {
				names = all
			}
			for key, p := range tc.chosen {
				if err := st.SetSessionPersona(ctx, key, p); err != nil {
					t.Fatal(err)
				}
			}
			r := NewResolver(st, testSet(t, names...), nil)
			r.SetRules(tc.byTarget, tc.byChannel, tc.def)
			if got := r.Resolve(ctx, target(tc.target)); got != tc.want {
				t.Fatalf("Resolve(%s) = %q, want %q", tc.target, got, tc.want)
			}

			// The agent's way: the target's own session read with the turn's
			// history; the resolver reads at most the thread's chat session.
			var own memory.SessionMeta
			if m, found, err := st.Session(ctx, tc.target); err != nil {
				t.Fatal(err)
			} else if found {
				own = m
			}
			cs := &countingSessions{SessionStore: st}
			ro := NewResolver(cs, testSet(t, names...), nil)
			ro.SetRules(tc.byTarget, tc.byChannel, tc.def)
			if got := ro.ResolveOwn(ctx, target(tc.target), &own); got != tc.want {
				t.Fatalf("ResolveOwn(%s) = %q, want %q", tc.target, got, tc.want)
			}
			if max := len(keys(target(tc.target))) - 1; cs.reads > max {
				t.Errorf("ResolveOwn read %d sessions, want at most %d (the thread's chat)", cs.reads, max)
			}
		})
	}
}

func TestChoose(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	r := NewResolver(st, personas.Builtin(), nil)
	r.SetRules(map[string]string{"slack:C1": "reporter"}, map[string]string{"discord": "buddy"}, "assistant")

	if err := r.Choose(ctx, target("telegram:42"), "pirate"); !errors.Is(err, personas.ErrUnknownPersona) {
		t.Fatalf("Choose(pirate) err = %v, want ErrUnknownPersona", err)
	}
	if _, found, _ := st.Session(ctx, "telegram:42"); found {
		t.Fatal("a rejected choice created a session")
	}
	for _, tg := range []string{"slack:C1", "slack:C1:99.1"} {
		if err := r.Choose(ctx, target(tg), "buddy"); !errors.Is(err, ErrPinned) {
			t.Fatalf("Choose on pinned %s err = %v, want ErrPinned", tg, err)
		}
	}

	if err := r.Choose(ctx, target("discord:7"), "reporter"); err != nil {
		t.Fatal(err)
	}
	if got := r.Resolve(ctx, target("discord:7")); got != "reporter" {
		t.Fatalf("after Choose, Resolve = %q", got)
	}
	meta, _, _ := st.Session(ctx, "discord:7")
	if meta.Persona != "reporter" {
		t.Fatalf("stored persona = %q", meta.Persona)
	}
	if err := r.Clear(ctx, target("discord:7")); err != nil {
		t.Fatal(err)
	}
	if got := r.Resolve(ctx, target("discord:7")); got != "buddy" {
		t.Fatalf("after Clear, Resolve = %q, want by_channel buddy", got)
	}
	if err := NewResolver(nil, personas.Builtin(), nil).Choose(ctx, target("discord:7"), "buddy"); err == nil {
		t.Fatal("Choose without a store succeeded")
	}
}

func TestChoiceKeepsHistoryAndSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	st, err := bolt.Open(path, memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	key := "telegram:42"
	turn := memory.Turn{ID: "t1", Messages: []memory.Message{
		{Role: memory.RoleUser, Content: "hello"},
		{Role: memory.RoleAssistant, Content: "hi!"},
	}}
	if err := st.AppendTurn(ctx, key, turn); err != nil {
		t.Fatal(err)
	}
	r := NewResolver(st, personas.Builtin(), nil)
	r.SetRules(nil, nil, "assistant")
	if err := r.Choose(ctx, target(key), "buddy"); err != nil {
		t.Fatal(err)
	}
	if err := r.Choose(ctx, target("slack:C9"), "reporter"); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st2 := openStore(t, path)
	r2 := NewResolver(st2, personas.Builtin(), nil)
	r2.SetRules(nil, nil, "assistant")
	if got := r2.Resolve(ctx, target(key)); got != "buddy" {
		t.Fatalf("after reopen Resolve(%s) = %q, want buddy", key, got)
	}
	if got := r2.Resolve(ctx, target("slack:C9:17.5")); got != "reporter" {
		t.Fatalf("after reopen, thread of a chosen chat resolves to %q", got)
	}
	hist, err := st2.LoadHistory(ctx, key, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 || hist[0].Content != "hello" || hist[1].Content != "hi!" {
		t.Fatalf("history after persona change = %+v", hist)
	}
}

func TestReloadSwapsSetAndRules(t *testing.T) {
	ctx := context.Background()
	r := NewResolver(nil, testSet(t, "assistant", "buddy"), nil)
	r.SetRules(nil, map[string]string{"discord": "buddy"}, "assistant")
	if got := r.Resolve(ctx, target("discord:1")); got != "buddy" {
		t.Fatalf("Resolve = %q", got)
	}
	byChannel := map[string]string{"discord": "poet"}
	r.SetPersonas(testSet(t, "assistant", "poet"))
	r.SetRules(nil, byChannel, "assistant")
	byChannel["discord"] = "assistant" // the Resolver keeps its own copy
	if got := r.Resolve(ctx, target("discord:1")); got != "poet" {
		t.Fatalf("after reload Resolve = %q, want poet", got)
	}
	if got, want := r.Names(), []string{"assistant", "poet"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Names = %v", got)
	}
	p, ok := r.Persona("")
	if !ok || p.Name != "assistant" || p.Identity != "I am assistant." {
		t.Fatalf("Persona(\"\") = %+v, %v", p, ok)
	}
	if _, ok := r.Persona("buddy"); ok {
		t.Fatal("persona of the old set still served")
	}
	r.SetPersonas(nil)
	if got := r.Resolve(ctx, target("discord:1")); got != "assistant" {
		t.Fatalf("empty set: Resolve = %q, want the configured default name", got)
	}
	if len(r.Names()) != 0 {
		t.Fatal("empty set lists names")
	}
}

func TestConcurrentResolveAndReload(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	a, b := testSet(t, "assistant", "buddy"), testSet(t, "assistant", "buddy", "poet")
	r := NewResolver(st, a, nil)
	r.SetRules(nil, nil, "assistant")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				r.SetPersonas(b)
				r.SetRules(map[string]string{"slack:C1": "poet"}, nil, "buddy")
			} else {
				r.SetPersonas(a)
				r.SetRules(nil, nil, "assistant")
			}
		}
	}()
	for i := 0; i < 200; i++ {
		got := r.Resolve(ctx, target("slack:C1"))
		if got != "assistant" && got != "buddy" && got != "poet" {
			t.Errorf("Resolve = %q", got)
		}
		_ = r.Choose(ctx, target("telegram:1"), "buddy")
		_, _ = r.Persona("")
	}
	close(stop)
	wg.Wait()
}

// failingStore makes the session level fail; Resolve must still answer.
type failingStore struct{}

func (failingStore) Session(context.Context, string) (memory.SessionMeta, bool, error) {
	return memory.SessionMeta{}, false, errors.New("disk on fire")
}

func (failingStore) SetSessionPersona(context.Context, string, string) error {
	return errors.New("disk on fire")
}

func TestStoreErrorsFallThrough(t *testing.T) {
	ctx := context.Background()
	r := NewResolver(failingStore{}, personas.Builtin(), nil)
	r.SetRules(nil, map[string]string{"discord": "buddy"}, "assistant")
	if got := r.Resolve(ctx, target("discord:1")); got != "buddy" {
		t.Fatalf("Resolve with a failing store = %q", got)
	}
	err := r.Choose(ctx, target("discord:1"), "reporter")
	if err == nil || err.Error() != `personas: choose "reporter" for discord:1: disk on fire` {
		t.Fatalf("Choose err = %v", err)
	}
}

func TestAgentPersona(t *testing.T) {
	p := personas.Persona{Name: "r", Identity: "You report.", Language: "German", Model: "m", Temperature: f32(0.2), MaxTokens: 10, Tools: []string{}}
	a := AgentPersona(p)
	if a.Name != "r" || a.Model != "m" || a.MaxTokens != 10 || *a.Temperature != 0.2 {
		t.Fatalf("AgentPersona = %+v", a)
	}
	if a.Tools == nil || len(a.Tools) != 0 {
		t.Fatalf("empty tool list must stay empty and non-nil (no tools), got %#v", a.Tools)
	}
	if !strings.HasPrefix(a.Identity, "You report.") || !strings.Contains(a.Identity, "Write your replies in German") {
		t.Fatalf("identity = %q", a.Identity)
	}
	*a.Temperature = 1.5
	if *p.Temperature != 0.2 {
		t.Fatal("AgentPersona shares the temperature pointer")
	}
	for _, lang := range []string{"", "auto", "Auto"} {
		p := personas.Persona{Identity: "Hi.", Language: lang}
		if a := AgentPersona(p); a.Identity != "Hi." || a.Tools != nil {
			t.Fatalf("language %q: identity %q tools %#v", lang, a.Identity, a.Tools)
		}
	}
}

func TestSetSourcePersona(t *testing.T) {
	set, _ := personas.NewSet(personas.Persona{Name: "zeta", Identity: "Z"}, personas.Persona{Name: "beta", Identity: "B", Language: "French"})
	src := SetSource{Set: set}
	p, ok := src.Persona("")
	if !ok || p.Name != "beta" || !strings.Contains(p.Identity, "French") {
		t.Fatalf("Persona(\"\") = %+v, %v", p, ok)
	}
	if _, ok := src.Persona("nope"); ok {
		t.Fatal("unknown persona found")
	}
}

func f32(v float32) *float32 { return &v }

// countingSessions counts session reads.
type countingSessions struct {
	SessionStore
	reads int
}

func (c *countingSessions) Session(ctx context.Context, key string) (memory.SessionMeta, bool, error) {
	c.reads++
	return c.SessionStore.Session(ctx, key)
}
