package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/personas"
)

// Persona resolution: the Resolver decides which persona serves a chat and
// records per-chat choices (/persona NAME); AgentPersona converts the
// personas package's data to the agent's type.
//
// Selection precedence (Resolver.Resolve): personas.by_target > the chat's
// own /persona choice (kept in the session's metadata, so it survives
// restarts; changing persona never touches history) > personas.by_channel >
// personas.default > the Set's own default. Threads: a thread target
// ("slack:C1:123.4") first looks for its own entry and then its chat's
// ("slack:C1") at each level, so a by_target binding of a chat — and a
// /persona choice made in the chat — applies to its threads, while a thread
// can still get its own choice. A name that no longer exists (the file was
// deleted and reloaded) is skipped with a warning and the next level decides.
// Choose refuses an unknown name (personas.ErrUnknownPersona) and a chat
// whose persona is pinned by personas.by_target (ErrPinned): the choice would
// be recorded but never take effect, which would mislead the user. The
// Resolver holds atomic pointers to the current Set and to the current rules,
// so a live reload swaps them without locks and a turn never sees half of a
// reload.

// SessionStore is what the Resolver needs from session storage; memory.Store
// implements it.
type SessionStore interface {
	Session(ctx context.Context, key string) (memory.SessionMeta, bool, error)
	SetSessionPersona(ctx context.Context, key, persona string) error
}

// ErrPinned is returned by Choose for a chat whose persona is fixed by
// personas.by_target: a per-chat choice would never take effect.
var ErrPinned = errors.New("persona is fixed by personas.by_target in the configuration")

// rules is one immutable snapshot of the selection rules.
type rules struct {
	byTarget  map[string]string
	byChannel map[string]string
	def       string
}

// Resolver decides which persona serves a chat (see above for the
// precedence) and records per-chat choices. It implements hub.Personas
// and agent.PersonaSource. Safe for concurrent use; SetPersonas and
// SetRules swap snapshots atomically for live reloads.
type Resolver struct {
	store SessionStore
	log   *slog.Logger
	set   atomic.Pointer[personas.Set]
	rules atomic.Pointer[rules]
}

var (
	_ Personas            = (*Resolver)(nil)
	_ agent.PersonaSource = (*Resolver)(nil)
	_ agent.PersonaSource = SetSource{}
)

// AgentPersona converts p to the agent's type. A Language other than "" and
// "auto" adds one line to the identity; Temperature and Tools are copied so
// the agent cannot change the Set.
func AgentPersona(p personas.Persona) agent.Persona {
	identity := p.Identity
	if l := strings.TrimSpace(p.Language); l != "" && !strings.EqualFold(l, "auto") {
		identity += "\n\nWrite your replies in " + l + ", unless the user writes in another language: then answer in theirs."
	}
	var temp *float32
	if p.Temperature != nil {
		v := *p.Temperature
		temp = &v
	}
	var tools []string
	if p.Tools != nil { // keep the nil / empty distinction
		tools = append(make([]string, 0, len(p.Tools)), p.Tools...)
	}
	return agent.Persona{
		Name:        p.Name,
		Identity:    identity,
		Model:       p.Model,
		Fallbacks:   agentFallbacks(p.Fallbacks),
		Temperature: temp,
		MaxTokens:   p.MaxTokens,
		Tools:       tools,
		Skills:      slices.Clone(p.Skills), // keeps the nil / empty distinction
	}
}

// SetSource serves one Set as an agent.PersonaSource: name "" is the Set's
// default.
type SetSource struct{ Set *personas.Set }

// Persona implements agent.PersonaSource.
func (s SetSource) Persona(name string) (agent.Persona, bool) {
	if name == "" {
		name = s.Set.Default()
	}
	p, ok := s.Set.Get(name)
	if !ok {
		return agent.Persona{}, false
	}
	return AgentPersona(p), true
}

// NewResolver returns a Resolver over set (nil = empty) with no rules
// (call SetRules). store may be nil: then there are no per-chat choices and
// Choose fails. A nil logger discards.
func NewResolver(store SessionStore, set *personas.Set, logger *slog.Logger) *Resolver {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &Resolver{store: store, log: logger}
	r.SetPersonas(set)
	r.SetRules(nil, nil, "")
	return r
}

// SetPersonas replaces the current Set (nil = empty).
func (r *Resolver) SetPersonas(set *personas.Set) {
	if set == nil {
		set = &personas.Set{}
	}
	r.set.Store(set)
}

// SetRules replaces the selection rules: byTarget maps targets
// ("slack:C0123", "slack:C0123:1700.1") and byChannel channel names
// ("discord") to persona names; def is personas.default. The maps are copied.
func (r *Resolver) SetRules(byTarget, byChannel map[string]string, def string) {
	r.rules.Store(&rules{
		byTarget:  maps.Clone(byTarget),
		byChannel: maps.Clone(byChannel),
		def:       def,
	})
}

// Current returns the current Set (e.g. for the heartbeat's Greeting).
func (r *Resolver) Current() *personas.Set { return r.set.Load() }

// Names lists the available personas, sorted.
func (r *Resolver) Names() []string { return r.set.Load().Names() }

// Get returns the persona called name from the current Set; "" is the
// default persona.
func (r *Resolver) Get(name string) (personas.Persona, bool) {
	if name == "" {
		name = r.defaultName(r.set.Load(), r.rules.Load())
	}
	return r.set.Load().Get(name)
}

// Persona implements agent.PersonaSource over the current Set; "" is the
// default persona (personas.default if it exists, else the Set's default).
func (r *Resolver) Persona(name string) (agent.Persona, bool) {
	p, ok := r.Get(name)
	if !ok {
		return agent.Persona{}, false
	}
	return AgentPersona(p), true
}

// defaultName is personas.default when the Set holds it, else the Set's own
// default, else personas.default as written (the agent then uses its
// built-in identity).
func (r *Resolver) defaultName(set *personas.Set, ru *rules) string {
	if ru.def != "" && set.Has(ru.def) {
		return ru.def
	}
	if d := set.Default(); d != "" {
		if ru.def != "" {
			r.log.Warn("default persona not found; using another", slog.String("persona", ru.def), slog.String("using", d))
		}
		return d
	}
	return ru.def
}

// keys returns the lookup keys of target, most specific first: a thread
// target yields itself and then its chat.
func keys(target channels.Target) []string {
	if target.ThreadID == "" {
		return []string{target.String()}
	}
	chat := channels.Target{Channel: target.Channel, ChatID: target.ChatID}
	return []string{target.String(), chat.String()}
}

// Resolve returns the persona a turn in target uses: personas.by_target
// (the target, then its chat) > the chat's /persona choice (the target's
// session, then its chat's) > personas.by_channel > personas.default > the
// Set's default. Names the current Set does not hold are skipped. Storage
// errors are logged and that level is skipped.
func (r *Resolver) Resolve(ctx context.Context, target channels.Target) string {
	return r.ResolveOwn(ctx, target, nil)
}

// ResolveOwn is Resolve with the metadata of target's own session already
// read (own, non-nil; the agent reads it with the turn's history): only a
// thread's chat session is read from the store.
func (r *Resolver) ResolveOwn(ctx context.Context, target channels.Target, own *memory.SessionMeta) string {
	set, ru := r.set.Load(), r.rules.Load()
	usable := func(level, key, name string) bool {
		if name == "" {
			return false
		}
		if set.Has(name) {
			return true
		}
		r.log.Warn("persona not found; ignoring", slog.String("level", level), slog.String("key", key), slog.String("persona", name))
		return false
	}
	ks := keys(target)
	for _, k := range ks {
		if name := ru.byTarget[k]; usable("by_target", k, name) {
			return name
		}
	}
	for i, k := range ks {
		var meta memory.SessionMeta
		switch {
		case i == 0 && own != nil:
			meta = *own
		case r.store != nil:
			m, found, err := r.store.Session(ctx, k)
			if err != nil {
				r.log.Warn("read session persona", slog.String("session", k), slog.Any("err", err))
				continue
			}
			if found {
				meta = m
			}
		}
		if usable("session", k, meta.Persona) {
			return meta.Persona
		}
	}
	if name := ru.byChannel[target.Channel]; usable("by_channel", target.Channel, name) {
		return name
	}
	return r.defaultName(set, ru)
}

// Choose records name as the persona of target's chat (its session). It
// refuses names the current Set does not hold (ErrUnknownPersona) and
// targets pinned by personas.by_target (ErrPinned). History is untouched.
func (r *Resolver) Choose(ctx context.Context, target channels.Target, name string) error {
	set, ru := r.set.Load(), r.rules.Load()
	if !set.Has(name) {
		return fmt.Errorf("personas: choose %q for %s: %w (available: %s)", clip(name, 60), target, personas.ErrUnknownPersona, strings.Join(set.Names(), ", "))
	}
	for _, k := range keys(target) {
		if pinned := ru.byTarget[k]; pinned != "" && set.Has(pinned) {
			return fmt.Errorf("personas: choose %q for %s: %w (%s: %s)", name, target, ErrPinned, k, pinned)
		}
	}
	if r.store == nil {
		return fmt.Errorf("personas: choose %q for %s: no session store", name, target)
	}
	if err := r.store.SetSessionPersona(ctx, target.String(), name); err != nil {
		return fmt.Errorf("personas: choose %q for %s: %w", name, target, err)
	}
	return nil
}

// Clear removes target's own /persona choice (its chat's choice, if target
// is a thread, still applies). History is untouched.
func (r *Resolver) Clear(ctx context.Context, target channels.Target) error {
	if r.store == nil {
		return fmt.Errorf("personas: clear persona of %s: no session store", target)
	}
	meta, found, err := r.store.Session(ctx, target.String())
	if err != nil {
		return fmt.Errorf("personas: clear persona of %s: %w", target, err)
	}
	if !found || meta.Persona == "" {
		return nil
	}
	if err := r.store.SetSessionPersona(ctx, target.String(), ""); err != nil {
		return fmt.Errorf("personas: clear persona of %s: %w", target, err)
	}
	return nil
}

// clip shortens s to at most n bytes (at a rune boundary) for an error
// message, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// agentFallbacks maps a persona's fallbacks to the agent's endpoints (the
// agent finds their keys in config); nil stays nil: llm.fallbacks apply.
func agentFallbacks(list []personas.Fallback) []agent.Endpoint {
	if list == nil {
		return nil
	}
	out := make([]agent.Endpoint, 0, len(list))
	for _, f := range list {
		out = append(out, agent.Endpoint{BaseURL: f.BaseURL, Model: f.Model})
	}
	return out
}
