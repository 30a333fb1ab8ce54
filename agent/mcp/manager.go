package mcp

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/retry"
)

// Options configure a Manager.
type Options struct {
	// Registry receives the servers' tools (and loses them when a server is
	// removed or stops listing them).
	Registry *agent.Registry
	// Admit reports whether agent.tools admits a tool name; nil admits all.
	Admit func(name string) bool
	// Logger gets connection and restart events (never header or env values).
	Logger *slog.Logger
	// HTTPTransport is the base transport of Streamable HTTP servers
	// (default http.DefaultTransport).
	HTTPTransport http.RoundTripper
	// MinBackoff and MaxBackoff bound the restart delay (1s, 1m); it
	// doubles on every failed attempt in a row, ±20% jitter
	// (retry.DefaultJitter).
	MinBackoff, MaxBackoff time.Duration
}

// Manager runs the configured MCP servers and keeps their tools in the
// registry. It is safe for concurrent use.
type Manager struct {
	o   Options
	log *slog.Logger

	mu      sync.Mutex // guards servers and closed
	servers map[string]*server
	closed  bool

	pubMu     sync.Mutex          // serialises registry updates
	published map[string][]string // server → tool names in the registry
	admit     func(string) bool
}

// New returns a Manager with no servers; Apply starts them.
func New(o Options) *Manager {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registry == nil {
		o.Registry = agent.NewRegistry()
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(o.MinBackoff, time.Minute)
	}
	admit := o.Admit
	if admit == nil {
		admit = func(string) bool { return true }
	}
	return &Manager{o: o, log: o.Logger, servers: map[string]*server{},
		published: map[string][]string{}, admit: admit}
}

func (m *Manager) httpTransport() http.RoundTripper {
	if m.o.HTTPTransport != nil {
		return m.o.HTTPTransport
	}
	return http.DefaultTransport
}

// restartPolicy is the policy between a server's restarts: MinBackoff doubling
// up to MaxBackoff, jittered so servers that failed together (a network
// blip) do not all restart at the same moment.
func (m *Manager) restartPolicy() retry.Policy {
	return retry.Policy{Initial: m.o.MinBackoff, Max: m.o.MaxBackoff, Jitter: retry.DefaultJitter}
}

// Apply makes the running servers match cfgs: servers no longer listed
// are stopped, new ones started, changed ones restarted; unchanged ones
// keep running untouched. It does not wait for new servers to connect
// (see WaitReady).
func (m *Manager) Apply(cfgs map[string]ServerConfig) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	var stop []*server
	for name, s := range m.servers {
		if c, ok := cfgs[name]; !ok || !c.equal(s.cfg) {
			stop = append(stop, s)
			delete(m.servers, name)
		}
	}
	var start []*server
	for name, c := range cfgs {
		if _, ok := m.servers[name]; !ok {
			s := newServer(m, name, c)
			m.servers[name] = s
			start = append(start, s)
		}
	}
	m.mu.Unlock()
	for _, s := range stop {
		s.log.Info("stopping MCP server")
		s.stop()
	}
	for _, s := range start {
		ctx, cancel := context.WithCancel(context.Background())
		s.cancel = cancel
		go s.run(ctx)
	}
}

// Attach moves the servers' tools to reg under a new agent.tools check
// (a reload that rebuilt the agent's registry) and re-publishes them.
func (m *Manager) Attach(reg *agent.Registry, admit func(string) bool) {
	if admit == nil {
		admit = func(string) bool { return true }
	}
	m.pubMu.Lock()
	if reg != nil && reg != m.o.Registry {
		m.o.Registry = reg
		m.published = map[string][]string{} // the old registry goes with the old agent
	}
	m.admit = admit
	m.pubMu.Unlock()
	m.mu.Lock()
	servers := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		servers = append(servers, s)
	}
	m.mu.Unlock()
	for _, s := range servers {
		s.mu.Lock()
		tools, refused := s.tools, s.refused
		s.mu.Unlock()
		m.publish(s, tools, refused)
	}
}

// publish replaces server s's tools in the registry with tools (nil
// removes them all) and records the refused ones. Tools agent.tools does
// not admit are kept on the server (for `mcp list`) but not registered.
func (m *Manager) publish(s *server, tools []*Tool, refused []RefusedTool) {
	m.pubMu.Lock()
	defer m.pubMu.Unlock()
	s.mu.Lock()
	s.tools, s.refused = tools, refused
	s.mu.Unlock()
	var admitted []agent.Tool
	for _, t := range tools {
		if m.admit(t.name) {
			admitted = append(admitted, t)
		}
	}
	names, errs := m.o.Registry.Replace(m.published[s.name], admitted)
	for _, err := range errs {
		s.log.Warn("MCP tool not offered", "err", err)
	}
	if len(names) == 0 {
		delete(m.published, s.name)
		return
	}
	m.published[s.name] = names
}

// Close stops every server and its child process, and waits for them.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	servers := m.servers
	m.servers = map[string]*server{}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(s.stop)
	}
	wg.Wait()
}

// ServerStatus is one server's state, for `switchboard mcp list` and the
// admin API.
type ServerStatus struct {
	Name     string   `json:"name"`
	State    State    `json:"state"`
	Error    string   `json:"error,omitempty"`
	Restarts int      `json:"restarts"`
	PID      int      `json:"pid,omitempty"`
	Tools    []string `json:"tools"`                 // <server>__<tool> names the server offers
	Offered  []string `json:"offered"`               // those agent.tools admits (registered)
	Missing  []string `json:"not_admitted,omitzero"` // listed by the server, not admitted by agent.tools
	// Renamed maps each of Tools whose name is not the server's own (a
	// character was replaced) to the server's name for it.
	Renamed map[string]string `json:"renamed,omitempty"`
	// Refused are the server's tools that are not offered at all, with the
	// reason (two names that map to one, a name too long, a schema too big).
	Refused []RefusedTool `json:"refused,omitempty"`
}

// Status lists every server, sorted by name.
func (m *Manager) Status() []ServerStatus {
	m.mu.Lock()
	servers := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		servers = append(servers, s)
	}
	m.mu.Unlock()
	sort.Slice(servers, func(i, j int) bool { return servers[i].name < servers[j].name })
	m.pubMu.Lock()
	defer m.pubMu.Unlock()
	out := make([]ServerStatus, 0, len(servers))
	for _, s := range servers {
		s.mu.Lock()
		st := ServerStatus{Name: s.name, State: s.state, Error: s.lastErr, Restarts: s.restarts, PID: s.pid,
			Tools: []string{}, Offered: []string{}}
		for _, t := range s.tools {
			st.Tools = append(st.Tools, t.name)
			if t.renamed() {
				if st.Renamed == nil {
					st.Renamed = map[string]string{}
				}
				st.Renamed[t.name] = t.remote
			}
		}
		st.Refused = slices.Clone(s.refused)
		s.mu.Unlock()
		st.Offered = append(st.Offered, m.published[s.name]...)
		for _, n := range st.Tools {
			if !m.admit(n) {
				st.Missing = append(st.Missing, n)
			}
		}
		out = append(out, st)
	}
	return out
}

// WaitReady waits until every server is ready (or ctx ends) and reports
// whether they all are.
func (m *Manager) WaitReady(ctx context.Context) bool {
	return m.wait(ctx, func(s State) bool { return s == StateReady })
}

// WaitSettled waits until every server is ready or has failed its first
// attempt (restarting, with an error), or ctx ends.
func (m *Manager) WaitSettled(ctx context.Context) bool {
	return m.wait(ctx, func(s State) bool { return s == StateReady || s == StateRestarting })
}

func (m *Manager) wait(ctx context.Context, done func(State) bool) bool {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		all := true
		for _, st := range m.Status() {
			all = all && done(st.State)
		}
		if all {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}
