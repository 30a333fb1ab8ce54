package personas

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync/atomic"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/memory"
)

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

// Resolver decides which persona serves a chat (see the package doc for the
// precedence) and records per-chat choices. It implements channels.Personas
// and agent.PersonaSource. Safe for concurrent use; SetPersonas and
// SetRules swap snapshots atomically for live reloads.
type Resolver struct {
	store SessionStore
	log   *slog.Logger
	set   atomic.Pointer[Set]
	rules atomic.Pointer[rules]
}

var (
	_ channels.Personas   = (*Resolver)(nil)
	_ agent.PersonaSource = (*Resolver)(nil)
	_ agent.PersonaSource = (*Set)(nil)
)

// NewResolver returns a Resolver over set (nil = empty) with no rules
// (call SetRules). store may be nil: then there are no per-chat choices and
// Choose fails. A nil logger discards.
func NewResolver(store SessionStore, set *Set, logger *slog.Logger) *Resolver {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &Resolver{store: store, log: logger}
	r.SetPersonas(set)
	r.SetRules(nil, nil, "")
	return r
}

// SetPersonas replaces the current Set (nil = empty).
func (r *Resolver) SetPersonas(set *Set) {
	if set == nil {
		set = &Set{}
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
func (r *Resolver) Current() *Set { return r.set.Load() }

// Names lists the available personas, sorted.
func (r *Resolver) Names() []string { return r.set.Load().Names() }

// Get returns the persona called name from the current Set; "" is the
// default persona.
func (r *Resolver) Get(name string) (Persona, bool) {
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
	return p.AgentPersona(), true
}

// defaultName is personas.default when the Set holds it, else the Set's own
// default, else personas.default as written (the agent then uses its
// built-in identity).
func (r *Resolver) defaultName(set *Set, ru *rules) string {
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
	if r.store != nil {
		for _, k := range ks {
			meta, found, err := r.store.Session(ctx, k)
			if err != nil {
				r.log.Warn("read session persona", slog.String("session", k), slog.Any("err", err))
				continue
			}
			if found && usable("session", k, meta.Persona) {
				return meta.Persona
			}
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
		return fmt.Errorf("personas: choose %q for %s: %w (available: %s)", truncate(name, 60), target, ErrUnknownPersona, strings.Join(set.Names(), ", "))
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
