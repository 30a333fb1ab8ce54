package ui

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/channels/web"
	"github.com/switchboard-bot/switchboard/heartbeat"
	"github.com/switchboard-bot/switchboard/internal/cluster"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/netaddr"
	"github.com/switchboard-bot/switchboard/memory"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// ChannelState is one channel as the overview shows it.
type ChannelState struct {
	Name      string
	Connected bool
	Restarts  int    // reconnects by the supervisor
	LastErr   string // redacted
}

// Backend is what the console needs from the running daemon.
type Backend interface {
	Config() *config.Config
	Store() memory.Store
	// Tokens are the admin tokens login accepts (server.admin_token and the
	// local admin.token); empty strings are ignored.
	Tokens() []string
	Channels() []ChannelState
	QueueDepth() int
	// Deliveries counts delivery outcomes beyond success (retried, failed, resent).
	Deliveries() map[string]float64
	Personas() *hub.Resolver
	Jobs() *heartbeat.Jobs
	PendingPairings(ctx context.Context) ([]hub.PairingRequest, error)
	ApprovePairing(ctx context.Context, actor, code string) (hub.PairingRequest, error)
	DenyPairing(ctx context.Context, actor, code string) (hub.PairingRequest, error)
	Approvals() []hub.WaitingApproval
	DecideApproval(ctx context.Context, session string, approve bool, actor string) error
	ResetSession(ctx context.Context, key, actor string) error
	// Reload re-reads config.yaml and the personas and says what changed.
	Reload(ctx context.Context, who string) (string, error)
	// CheckConfig runs the checks beyond the file itself that a reload
	// runs (persona names the config refers to, against the personas
	// directory in force), with file:line: the daemon's one check, which
	// `config set` asks for too.
	CheckConfig(cfg *config.Config) error
	// Cluster is the replicas and leases as the shared database sees them;
	// ok is false on a single host (bolt), where the overview shows none.
	Cluster(ctx context.Context) (st cluster.Status, ok bool, err error)
	// ModelEndpoints is the state of the model endpoints (the primary and
	// its fallbacks): up, down or cooling down, and which model answered
	// last; URLs redacted, never a key.
	ModelEndpoints() []agent.EndpointStatus
}

// Chat is the web channel the chat page talks through; *web.Adapter
// (channels/web) is one.
type Chat interface {
	// Post hands an operator message of conversation conv to the hub.
	Post(ctx context.Context, conv, user, text string) (string, error)
	// Subscribe streams conv's events until cancel is called.
	Subscribe(conv string) (events <-chan web.Event, cancel func())
	// History is what was sent to conv in this process (bounded); the
	// running turn's drafts are marked Live.
	History(conv string) []web.Event
	// Typing reports whether a turn of conv is running (its typing
	// indicator is on).
	Typing(conv string) bool
	// Posts is what the operator posted to conv in this process (bounded).
	Posts(conv string) []web.Event
}

// ChatEvent is one event of a web conversation.
type ChatEvent = web.Event

// WebChannel is the channel name of the console's chat.
const WebChannel = web.Name

// Options configures a Server.
type Options struct {
	Backend Backend
	Chat    Chat // nil: the chat page says the web channel is off
	Stats   *Stats
	Logger  *slog.Logger
	Now     func() time.Time
	// SessionTTL is how long a login lasts without use (default 12h).
	SessionTTL time.Duration
	// MaxSessions bounds the login table (default 64; the oldest goes).
	MaxSessions int
	// LoginPerIP and LoginGlobal are the login attempt rates (per minute;
	// defaults 5 and 30), each with a burst of the same size.
	LoginPerIP, LoginGlobal int
	// LiveInterval is how often the overview stream refreshes (default 2s).
	LiveInterval time.Duration
}

func (o *Options) defaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = 12 * time.Hour
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 64
	}
	if o.LoginPerIP <= 0 {
		o.LoginPerIP = 5
	}
	if o.LoginGlobal <= 0 {
		o.LoginGlobal = 30
	}
	if o.LiveInterval <= 0 {
		o.LiveInterval = 2 * time.Second
	}
	if o.Stats == nil {
		o.Stats = NewStats(o.Now)
	}
}

// Server serves the console. Create it with New; Close ends live streams.
type Server struct {
	o      Options
	log    *slog.Logger
	pages  *pageSet
	auth   *auth
	mux    *http.ServeMux
	done   chan struct{}
	closer sync.Once
	days   dayHistory // the overview's tokens-per-day chart (history.go)
	// earlierTurns are the overview's last turns of before this process
	// (recent.go).
	earlierTurns earlierTurns
}

// New builds the console. It refuses a config that serves it off loopback
// without server.admin_token.
func New(o Options) (*Server, error) {
	if o.Backend == nil {
		return nil, errors.New("ui: no backend")
	}
	o.defaults()
	if err := CheckServe(o.Backend.Config()); err != nil {
		return nil, err
	}
	pages, err := newPageSet(templateFS)
	if err != nil {
		return nil, err
	}
	s := &Server{o: o, log: o.Logger.With("component", "ui"), pages: pages, done: make(chan struct{})}
	s.auth = newAuth(o)
	s.routes()
	return s, nil
}

// Close ends the live streams (call it when the HTTP server shuts down).
func (s *Server) Close() { s.closer.Do(func() { close(s.done) }) }

// Handler serves / (a redirect to /ui/) and everything under /ui/.
func (s *Server) Handler() http.Handler { return s.mux }

func (s *Server) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	m.Handle("GET /ui/static/", s.headers(http.StripPrefix("/ui/static/", staticHandler(static))))
	m.Handle("GET /ui/login", s.headers(http.HandlerFunc(s.loginPage)))
	m.Handle("POST /ui/login", s.headers(http.HandlerFunc(s.loginPost)))
	m.Handle("POST /ui/login/link", s.headers(http.HandlerFunc(s.mintLink))) // oncelink.go
	m.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusSeeOther))
	m.Handle("POST /ui/chat/upload", s.headers(s.uploadBound(s.auth.require(s.chatUpload)))) // upload.go
	for pattern, h := range map[string]http.HandlerFunc{
		"POST /ui/logout":               s.logout,
		"GET /ui/{$}":                   s.overview,
		"GET /ui/live/overview":         s.overviewStream,
		"GET /ui/live/attention":        s.attentionStream, // attention.go
		"GET /ui/chat":                  s.chatPage,
		"POST /ui/chat/new":             s.chatNew,
		"POST /ui/chat/send":            s.chatSend,
		"POST /ui/chat/persona":         s.chatPersona,
		"POST /ui/chat/approval":        s.chatApproval, // chatapproval.go
		"GET /ui/chat/stream":           s.chatStream,
		"GET /ui/sessions":              s.sessionsPage,
		"GET /ui/sessions/show":         s.sessionShow,
		"GET /ui/sessions/export":       s.sessionExport,
		"GET /ui/sessions/file":         s.sessionFile,
		"POST /ui/sessions/reset":       s.sessionReset,
		"GET /ui/jobs":                  s.jobsPage,
		"POST /ui/jobs/create":          s.jobCreate,
		"POST /ui/jobs/{action}":        s.jobAction,
		"GET /ui/personas":              s.personasPage,
		"GET /ui/personas/edit":         s.personaEdit,
		"POST /ui/personas/save":        s.personaSave,
		"GET /ui/config":                s.configPage,
		"POST /ui/config/key":           s.configKey,
		"POST /ui/config/file":          s.configFile,
		"GET /ui/pairing":               s.pairingPage,
		"POST /ui/pairing/{decision}":   s.pairingDecide,
		"GET /ui/audit":                 s.auditPage,
		"GET /ui/usage":                 s.usagePage,
		"GET /ui/tasks":                 s.tasksPage,
		"GET /ui/approvals":             s.approvalsPage,
		"POST /ui/approvals/{decision}": s.approvalDecide,
		"GET /ui/logs":                  s.logsPage, // logs.go
		"GET /ui/live/logs":             s.logsStream,
		"GET /ui/skills":                s.skillsPage, // skills.go
		"GET /ui/skills/show":           s.skillShow,
		"GET /ui/mcp":                   s.mcpPage, // mcp.go
		"POST /ui/mcp/restart":          s.mcpRestart,
		"GET /ui/channels":              s.channelsPage, // channels.go
		"GET /ui/":                      http.NotFound,
		"POST /ui/":                     http.NotFound,
	} {
		m.Handle(pattern, s.headers(s.auth.require(h)))
	}
	s.mux = m
}

// headers sets the security headers of every answer.
func (s *Server) headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		if !isStatic(r) {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// CSP is the console's Content-Security-Policy.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

func isStatic(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/ui/static/") }

func staticHandler(fsys fs.FS) http.Handler {
	files := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no directory listings
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	})
}

// CheckServe says why the console may not be served with cfg (nil: it may):
// off loopback it needs server.admin_token, the admin endpoints' rule. The
// daemon runs the web channel only when the console serves it.
func CheckServe(cfg *config.Config) error {
	if !netaddr.IsLoopback(cfg.Server.Listen) && !cfg.Server.AdminToken.IsSet() {
		return errors.New("the web console is off: server.listen is not a loopback address and server.admin_token is empty (set it, or server.ui: false)")
	}
	return nil
}

// webTarget is the session key of web conversation conv.
func webTarget(conv string) channels.Target {
	return channels.Target{Channel: WebChannel, ChatID: conv}
}
