package daemon

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/internal/netaddr"
)

// startHTTP serves /healthz, /readyz, webhooks and the admin endpoints on
// server.listen. An empty listen address disables the server.
func (d *Daemon) startHTTP() error {
	listen := d.config().Server.Listen
	if listen == "" {
		return nil
	}
	d.localToken = d.writeLocalToken()
	d.adminGuesses = newGuessLimit()
	if cfg := d.config(); cfg.Server.AdminToken.Value() == "" && netaddr.IsLoopback(listen) && len(webhookModes(cfg)) > 0 {
		d.log.Warn("admin endpoints need a token: a webhook mode is on, so requests may come through a reverse proxy; local CLI commands use "+AdminTokenFile+" in bot.data_dir, set server.admin_token for anything else",
			"webhook", strings.Join(webhookModes(cfg), ", "))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", d.serveReady)
	mux.Handle("GET /metrics", d.metrics.Handler())
	// Webhook routes look the channel up per request, so a channel restarted
	// by a config reload (or switched to webhook mode) is served at once.
	for _, p := range d.config().Platforms().All() {
		for _, r := range p.Routes {
			mux.Handle(r.Method+" "+r.Path, d.webhook(p.Name))
		}
	}
	mux.HandleFunc("POST "+HelloPath, d.serveHello) // no token: the CLI asks before it sends one (hello.go)
	mux.Handle("GET /admin/status", d.admin(http.HandlerFunc(d.serveStatus)))
	mux.Handle("GET /admin/pairing", d.admin(http.HandlerFunc(d.servePairingList)))
	mux.Handle("POST /admin/pairing/approve", d.admin(http.HandlerFunc(d.servePairingApprove)))
	mux.Handle("GET /admin/jobs", d.admin(http.HandlerFunc(d.serveJobs)))
	mux.Handle("GET /admin/mcp", d.admin(http.HandlerFunc(d.serveMCP)))
	mux.Handle("POST /admin/jobs/{action}", d.admin(http.HandlerFunc(d.serveJobAction)))
	d.registerAdminAPI(mux, d.admin)
	d.mountUI(mux)
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen on %s (server.listen): %w", listen, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	srv.RegisterOnShutdown(d.closeUI)
	d.mu.Lock()
	d.server, d.addr = srv, ln.Addr()
	d.mu.Unlock()
	d.writeListenFile(ln.Addr())
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("http server", "err", err)
		}
	}()
	return nil
}

func (d *Daemon) stopHTTP() {
	d.mu.Lock()
	srv, addr := d.server, d.addr
	d.mu.Unlock()
	if srv == nil {
		return
	}
	d.removeListenFile(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
}

// serveReady answers 200 when the store serves and writes, and every channel
// is connected; 503 with the reasons otherwise. The store is unavailable
// while PostgreSQL does not answer or the bolt file is gone or failing
// (storehealth.go: shown within cluster.lease_ttl, traffic or not); while
// its writes fail (disk full) messages stay pending and are retried.
func (d *Daemon) serveReady(w http.ResponseWriter, _ *http.Request) {
	var problems []string
	select {
	case <-d.ready:
	default:
		problems = append(problems, "starting")
	}
	if sh := d.storeHealth(); !sh.OK {
		problems = append(problems, "store: unavailable since "+sh.Since.UTC().Format(time.RFC3339)+": "+sh.Reason)
	}
	if sh := d.handler.StorageHealth(); !sh.OK {
		problems = append(problems, "store: writes failing since "+sh.Since.UTC().Format(time.RFC3339)+": "+sh.Reason)
	}
	states := d.ChannelStates()
	names := make([]string, 0, len(states))
	for n := range states {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !states[n].Ready {
			problems = append(problems, n+": not connected")
		}
	}
	if len(problems) > 0 {
		http.Error(w, strings.Join(problems, "\n"), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// admin guards admin endpoints: a bearer token (server.admin_token or the
// local admin.token) always works; without one only a direct request from a
// loopback peer is let in, and only when tokenlessAdmin allows it
// (adminauth.go).
func (d *Daemon) admin(next http.Handler) http.Handler {
	token := d.config().Server.AdminToken.Value()
	tokenless := tokenlessAdmin(d.config())
	local := d.localToken
	guesses := d.adminGuesses
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !tokenless || !fromLoopbackPeer(r) || viaProxy(r) || crossSite(r) {
			got := bearer(r.Header.Get("Authorization"))
			ip, now := peerIP(r), time.Now()
			if viaProxy(r) {
				// A proxy on this host sends every client's guesses from the
				// address the local CLI uses: limit them apart.
				ip += " via a proxy"
			}
			// The token is checked first: only wrong ones are limited, so
			// guesses from elsewhere never lock the right token out.
			okToken := token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
			okLocal := local != "" && subtle.ConstantTimeCompare([]byte(got), []byte(local)) == 1
			if !okToken && !okLocal {
				if got != "" && guesses.limited(ip, now) {
					w.Header().Set("Retry-After", "60")
					http.Error(w, "too many wrong admin tokens from this address: wait a minute and try again", http.StatusTooManyRequests)
					return
				}
				if got != "" {
					guesses.wrong(ip, now)
				}
				if tokenless && viaProxy(r) {
					http.Error(w, "admin endpoints are not served through a proxy without a token: set server.admin_token (Authorization: Bearer …)", http.StatusForbidden)
					return
				}
				if tokenless && crossSite(r) {
					http.Error(w, "admin endpoints are not served to other sites (Origin, Sec-Fetch-Site or a Host that is not loopback) without a token: use the CLI, or send Authorization: Bearer …", http.StatusForbidden)
					return
				}
				http.Error(w, "admin endpoints need server.admin_token (Authorization: Bearer …)", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// bearer is the token of an "Authorization: Bearer <token>" header (the
// scheme in any case, RFC 7235), "" without one.
func bearer(h string) string {
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

func (d *Daemon) serveStatus(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("format") == "json" { // `switchboard status --json`
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(d.StatusReport(r.Context()))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, d.StatusText(r.Context()))
}

func (d *Daemon) servePairingList(w http.ResponseWriter, r *http.Request) {
	reqs, err := d.handler.Pairing().Pending(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(reqs)
}

func (d *Daemon) servePairingApprove(w http.ResponseWriter, r *http.Request) {
	code := r.FormValue("code")
	req, err := d.ApprovePairing(r.Context(), "admin-api", code)
	if errors.Is(err, hub.ErrUnknownCode) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(req)
}

func (d *Daemon) serveJobs(w http.ResponseWriter, r *http.Request) {
	rows, err := d.JobRows(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(rows)
}

func (d *Daemon) serveJobAction(w http.ResponseWriter, r *http.Request) {
	msg, err := d.JobAction(r.Context(), r.PathValue("action"), r.FormValue("name"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(msg)
}

// webhook dispatches to the current channel called name when it is in webhook mode.
func (d *Daemon) webhook(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ch, ok := d.handler.Channel(name)
		wh, isWebhook := ch.(channels.Webhook)
		if !ok || !isWebhook || wh.WebhookPattern() == "" {
			http.NotFound(w, r)
			return
		}
		wh.WebhookHandler().ServeHTTP(w, r)
	})
}
