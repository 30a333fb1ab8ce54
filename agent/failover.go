package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	redacturl "github.com/switchboard-bot/switchboard/internal/redact"
)

// DefaultFailoverCooldown is how long an endpoint that just failed is
// skipped by later turns before it is tried again.
const DefaultFailoverCooldown = 30 * time.Second

// Endpoint is one model endpoint of the failover chain (llm.fallbacks, a
// persona's fallbacks).
type Endpoint struct {
	BaseURL string // up to and including /v1; "" = the primary's base URL
	APIKey  string // "" = the key of the configured endpoint with the same base URL
	Model   string // "" = the model the turn asked for
}

// String names the endpoint without its API key.
func (e Endpoint) String() string {
	return fmt.Sprintf("agent.Endpoint{BaseURL:%q Model:%q}", redacturl.URL(e.BaseURL), e.Model)
}

// GoString is String, so %#v does not print the API key either.
func (e Endpoint) GoString() string { return e.String() }

// Model call outcomes (ModelCall.Outcome).
const (
	OutcomeOK       = "ok"       // the endpoint answered
	OutcomeFailed   = "failed"   // a transient failure after the endpoint's retries: the chain moved on
	OutcomeRefused  = "refused"  // a permanent refusal (bad key, unknown model, bad request): reported
	OutcomeCanceled = "canceled" // the turn was stopped
)

// ModelCall is reported to Options.OnModelCall after each endpoint of the
// chain was asked (metrics). From is set when this call is a failover: the
// endpoint that failed before it in the same call.
type ModelCall struct {
	Endpoint string // "primary", "fallback 1", … (never a URL)
	Model    string
	Outcome  string
	From     string
}

// Endpoint states (EndpointStatus.State).
const (
	StateUp          = "up"           // answered last time (or never asked)
	StateCoolingDown = "cooling down" // failed; skipped by new turns until CoolingUntil
	StateDown        = "down"         // failed; the cool-down is over, the next turn asks it again
)

// EndpointStatus is what /status shows of one endpoint of the chain.
type EndpointStatus struct {
	Name         string    `json:"name"`               // "primary", "fallback 1", …
	Model        string    `json:"model"`              // the configured model ("" = the turn's)
	BaseURL      string    `json:"base_url,omitempty"` // redacted of credentials
	State        string    `json:"state"`
	DownSince    time.Time `json:"down_since,omitzero"`
	CoolingUntil time.Time `json:"cooling_until,omitzero"`
	LastError    string    `json:"last_error,omitempty"`
	LastAnswered time.Time `json:"last_answered,omitzero"`
	LastModel    string    `json:"last_model,omitempty"` // the model that answered then
}

// endpointState is one configured endpoint with its provider and health.
// Endpoints are shared by every chain that names them.
type endpointState struct {
	name string
	ep   Endpoint
	prov *Provider

	mu           sync.Mutex
	downSince    time.Time // zero = up
	coolUntil    time.Time
	lastErr      string
	lastAnswered time.Time
	lastModel    string
}

func (e *endpointState) cooling(now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.downSince.IsZero() && now.Before(e.coolUntil)
}

// answered records an answer; it reports whether the endpoint was down.
func (e *endpointState) answered(now time.Time, model string) (wasDown bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	wasDown = !e.downSince.IsZero()
	e.downSince, e.coolUntil, e.lastErr = time.Time{}, time.Time{}, ""
	e.lastAnswered, e.lastModel = now, model
	return wasDown
}

func (e *endpointState) failed(now time.Time, cooldown time.Duration, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.downSince.IsZero() {
		e.downSince = now
	}
	e.coolUntil = now.Add(cooldown)
	e.lastErr = err.Error()
}

func (e *endpointState) status(now time.Time) EndpointStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := EndpointStatus{Name: e.name, Model: e.ep.Model, BaseURL: redacturl.URL(e.ep.BaseURL), State: StateUp,
		LastError: e.lastErr, LastAnswered: e.lastAnswered, LastModel: e.lastModel}
	if !e.downSince.IsZero() {
		s.DownSince = e.downSince
		s.State = StateDown
		if now.Before(e.coolUntil) {
			s.State, s.CoolingUntil = StateCoolingDown, e.coolUntil
		}
	}
	return s
}

// chain is the primary endpoint followed by its fallbacks, in order.
type chain struct{ eps []*endpointState }

// chainCursor is a turn's place in a chain: once a fallback answered, the
// rest of the turn stays on it (a tool exchange never mixes models unless
// one failed); a new turn starts at the primary again.
type chainCursor struct{ at int }

// models owns the endpoints and the chains built of them: the configured
// one (llm.base_url, then llm.fallbacks) and, built when first used, one per
// distinct list of persona fallbacks.
type models struct {
	o        Options
	primary  *chain
	mu       sync.Mutex
	byKey    map[string]*endpointState // base URL, key and model → endpoint
	personas map[string]*chain         // persona name and its fallbacks → chain
}

func endpointKey(e Endpoint) string { return e.BaseURL + "\x00" + e.APIKey + "\x00" + e.Model }

func newModels(o Options) *models {
	m := &models{o: o, byKey: map[string]*endpointState{}, personas: map[string]*chain{}}
	primary := &endpointState{name: "primary", ep: Endpoint{BaseURL: o.BaseURL, APIKey: o.APIKey, Model: o.Model}, prov: NewProvider(o)}
	m.byKey[endpointKey(primary.ep)] = primary
	m.primary = &chain{eps: []*endpointState{primary}}
	for i, f := range o.Fallbacks {
		m.primary.eps = append(m.primary.eps, m.endpoint(fmt.Sprintf("fallback %d", i+1), m.resolve(f)))
	}
	return m
}

// resolve fills in what a fallback left out: the primary's base URL, and
// the key of the configured endpoint with the same base URL (persona files
// never hold keys).
func (m *models) resolve(f Endpoint) Endpoint {
	if f.BaseURL == "" {
		f.BaseURL = m.o.BaseURL
	}
	if f.APIKey == "" {
		switch {
		case f.BaseURL == m.o.BaseURL:
			f.APIKey = m.o.APIKey
		default:
			for _, c := range m.o.Fallbacks {
				if c.BaseURL == f.BaseURL && c.APIKey != "" {
					f.APIKey = c.APIKey
					break
				}
			}
		}
	}
	return f
}

// endpoint returns the shared state of e, built under name when new.
func (m *models) endpoint(name string, e Endpoint) *endpointState {
	if s, ok := m.byKey[endpointKey(e)]; ok {
		return s
	}
	o := m.o
	o.BaseURL, o.APIKey = e.BaseURL, e.APIKey
	if e.Model != "" {
		o.Model = e.Model
	}
	s := &endpointState{name: name, ep: e, prov: NewProvider(o)}
	m.byKey[endpointKey(e)] = s
	return s
}

// chainFor is the chain of p: the configured one unless p lists its own
// fallbacks (an empty list: the primary alone).
func (m *models) chainFor(p Persona) *chain {
	if p.Fallbacks == nil {
		return m.primary
	}
	key := p.Name
	for _, f := range p.Fallbacks {
		key += "\x01" + endpointKey(f)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.personas[key]; ok {
		return c
	}
	c := &chain{eps: []*endpointState{m.primary.eps[0]}}
	for i, f := range p.Fallbacks {
		c.eps = append(c.eps, m.endpoint(fmt.Sprintf("%s fallback %d", p.Name, i+1), m.resolve(f)))
	}
	m.personas[key] = c
	return c
}

// statuses lists every endpoint: the configured chain, then those only
// personas use.
func (m *models) statuses(now time.Time) []EndpointStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[*endpointState]bool{}
	var out []EndpointStatus
	add := func(c *chain) {
		for _, e := range c.eps {
			if !seen[e] {
				seen[e] = true
				out = append(out, e.status(now))
			}
		}
	}
	add(m.primary)
	for _, k := range slices.Sorted(maps.Keys(m.personas)) {
		add(m.personas[k])
	}
	return out
}

// failoverable reports whether err is worth asking the next endpoint:
// a transient failure that outlasted the endpoint's own retries (refused
// connection, timeout, cut stream, 5xx, 429). A permanent refusal (bad key,
// unknown model, a rejected request) is the operator's to fix and is
// reported, not hidden behind another model.
func failoverable(err error) bool {
	var me *ModelError
	return errors.As(err, &me) && me.Transient()
}

// chat asks the endpoints of c from cur on, in order, and returns the first
// answer. Endpoints cooling down after a failure are skipped while another
// is left to ask. Text streamed by an attempt that failed is discarded
// (obs.Discard) before the next endpoint is asked.
func (a *Agent) chat(ctx context.Context, c *chain, cur *chainCursor, req ChatRequest, obs StreamObserver) (ChatResponse, error) {
	now := a.o.Now()
	var order []int
	for i := cur.at; i < len(c.eps); i++ {
		if !c.eps[i].cooling(now) {
			order = append(order, i)
		}
	}
	if len(order) == 0 { // every one failed lately: ask them anyway rather than strand the chat
		for i := cur.at; i < len(c.eps); i++ {
			order = append(order, i)
		}
	}
	var (
		emitted bool
		from    string
		lastErr error
	)
	w := obs
	if obs.Text != nil {
		w.Text = func(s string) { emitted = true; obs.Text(s) }
	}
	if obs.Discard != nil {
		w.Discard = func() { emitted = false; obs.Discard() }
	}
	for n, i := range order {
		e := c.eps[i]
		r := req
		if i > 0 && e.ep.Model != "" {
			r.Model = e.ep.Model
		}
		resp, err := e.prov.Chat(ctx, r, w)
		if err == nil {
			if e.answered(a.o.Now(), r.Model) && i == 0 {
				a.log.LogAttrs(ctx, slog.LevelInfo, "the primary model endpoint answers again",
					slog.String("model", r.Model))
			}
			resp.Model, resp.Endpoint = r.Model, e.name
			cur.at = i
			a.reportCall(ModelCall{Endpoint: e.name, Model: r.Model, Outcome: OutcomeOK, From: from})
			return resp, nil
		}
		switch {
		case ctx.Err() != nil:
			a.reportCall(ModelCall{Endpoint: e.name, Model: r.Model, Outcome: OutcomeCanceled, From: from})
			return resp, err
		case !failoverable(err):
			a.reportCall(ModelCall{Endpoint: e.name, Model: r.Model, Outcome: OutcomeRefused, From: from})
			return resp, err
		}
		e.failed(a.o.Now(), a.o.FailoverCooldown, err)
		a.reportCall(ModelCall{Endpoint: e.name, Model: r.Model, Outcome: OutcomeFailed, From: from})
		lastErr = err
		if n == len(order)-1 {
			break
		}
		next := c.eps[order[n+1]]
		if emitted && obs.Discard != nil {
			w.Discard()
		}
		a.log.LogAttrs(ctx, slog.LevelWarn, "model endpoint failed; failing over",
			slog.String("from", e.name), slog.String("model", r.Model), slog.String("to", next.name),
			slog.Duration("cooldown", a.o.FailoverCooldown), slog.String("error", err.Error()))
		from = e.name
	}
	return ChatResponse{}, lastErr
}

func (a *Agent) reportCall(c ModelCall) {
	if a.o.OnModelCall != nil {
		a.o.OnModelCall(c)
	}
}

// Endpoints reports the state of every model endpoint: the primary, the
// configured fallbacks and those only personas use (for /status).
func (a *Agent) Endpoints() []EndpointStatus { return a.models.statuses(a.o.Now()) }
