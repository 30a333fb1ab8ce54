package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/switchboard-bot/switchboard/memory"
)

// Cookie names.
const (
	sessionCookie = "sb_session"
	preCookie     = "sb_login" // double-submit CSRF token of the login form
)

// Actor is who the audit log names for changes made in the console.
const Actor = "web-ui"

// loginSession is one logged-in browser.
type loginSession struct {
	id      string
	csrf    string
	created time.Time
	expires time.Time
	flash   string // one message for the next page
}

// auth holds the login table and the login rate limits.
type auth struct {
	o      Options
	mu     sync.Mutex
	byID   map[string]*loginSession
	perIP  map[string]*rate.Limiter
	global *rate.Limiter
	links  *onceLinks // one-time login links (oncelink.go)
}

func newAuth(o Options) *auth {
	return &auth{o: o, byID: map[string]*loginSession{}, perIP: map[string]*rate.Limiter{},
		global: rate.NewLimiter(rate.Limit(float64(o.LoginGlobal)/60), o.LoginGlobal), links: newOnceLinks()}
}

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b[:])
}

type ctxKey struct{}

// sessionOf is the login of a request that passed require.
func sessionOf(r *http.Request) *loginSession {
	s, _ := r.Context().Value(ctxKey{}).(*loginSession)
	return s
}

// lookup returns the live session of r, sliding its expiry.
func (a *auth) lookup(r *http.Request) *loginSession {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil
	}
	now := a.o.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.byID[c.Value]
	if s == nil {
		return nil
	}
	if !now.Before(s.expires) {
		delete(a.byID, s.id)
		return nil
	}
	s.expires = now.Add(a.o.SessionTTL)
	return s
}

// create starts a session, dropping expired ones and, at the bound, the oldest.
func (a *auth) create() *loginSession {
	now := a.o.Now()
	s := &loginSession{id: randomToken(), csrf: randomToken(), created: now, expires: now.Add(a.o.SessionTTL)}
	a.mu.Lock()
	defer a.mu.Unlock()
	var oldest *loginSession
	for id, x := range a.byID {
		if !now.Before(x.expires) {
			delete(a.byID, id)
			continue
		}
		if oldest == nil || x.created.Before(oldest.created) {
			oldest = x
		}
	}
	if len(a.byID) >= a.o.MaxSessions && oldest != nil {
		delete(a.byID, oldest.id)
	}
	a.byID[s.id] = s
	return s
}

func (a *auth) remove(s *loginSession) {
	a.mu.Lock()
	delete(a.byID, s.id)
	a.mu.Unlock()
}

// setFlash and takeFlash carry one message to the next page of a session.
func (a *auth) setFlash(s *loginSession, msg string) {
	a.mu.Lock()
	s.flash = msg
	a.mu.Unlock()
}

func (a *auth) takeFlash(s *loginSession) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := s.flash
	s.flash = ""
	return f
}

// Login limits (the login form and POST /ui/login/link take the same admin
// token, and share them).
//
// A token is compared first, in constant time, and a right one is never
// refused by a limit: the limits count wrong tokens only, so a stranger's
// guesses cannot lock the operator out (the local token is 32 random bytes
// and the README has server.admin_token made the same way; guessing either
// is hopeless, and the limits keep wrong guesses from flooding the audit).
// Wrong tokens are limited per bucket, LoginPerIP a minute, and overall,
// LoginGlobal a minute, each with a burst of as many; past either, a wrong
// token is answered 429 (and not audited). A bucket is the TCP peer's
// address; requests that came through a reverse proxy (they carry one of
// proxyHeaders) count in a bucket of their own for that peer, because a
// proxy on this host sends every stranger's request from 127.0.0.1, the
// address the local CLI uses. Proxy headers are never trusted for an
// address. The admin API keeps its own count the same way
// (internal/daemon/adminauth.go).

// proxyHeaders mark a request that came through a reverse proxy.
var proxyHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Real-Ip", "X-Forwarded-Host", "X-Forwarded-Proto"}

// limitKey is the login-limit bucket of r, also the "from …" of its audit
// records.
func limitKey(r *http.Request) string {
	for _, h := range proxyHeaders {
		if _, ok := r.Header[h]; ok {
			return clientIP(r) + " via a proxy"
		}
	}
	return clientIP(r)
}

// tokenOK reports whether tok is one of tokens, comparing each in constant
// time.
func tokenOK(tok string, tokens []string) bool {
	ok := false
	for _, t := range tokens {
		if equal(tok, t) {
			ok = true
		}
	}
	return ok
}

// wrongToken counts a wrong token from bucket key; it reports false, and
// counts nothing, when the bucket or the global limit is spent.
func (a *auth) wrongToken(key string) bool {
	now := a.o.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.limiterLocked(key)
	if l.TokensAt(now) < 1 || a.global.TokensAt(now) < 1 {
		return false
	}
	l.AllowN(now, 1)
	a.global.AllowN(now, 1)
	return true
}

// limiterLocked is key's login rate limiter (a.mu held).
func (a *auth) limiterLocked(key string) *rate.Limiter {
	l := a.perIP[key]
	if l == nil {
		if len(a.perIP) >= 4096 { // bounded: forget every address at once
			a.perIP = map[string]*rate.Limiter{}
		}
		l = rate.NewLimiter(rate.Limit(float64(a.o.LoginPerIP)/60), a.o.LoginPerIP)
		a.perIP[key] = l
	}
	return l
}

// require lets a request through only with a live session, and a POST only
// with the session's CSRF token from the same origin.
func (a *auth) require(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := a.lookup(r)
		if s == nil {
			if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/ui/live/") && !strings.HasSuffix(r.URL.Path, "/stream") {
				http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			http.Error(w, "log in first (/ui/login)", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost {
			if crossOrigin(r) {
				http.Error(w, "refused: the request came from another site", http.StatusForbidden)
				return
			}
			// The bound holds however the token comes; a form cut by it is
			// refused as too large, not for the token the cut part held.
			bound := formBound(r) // an upload's is media.max_upload (upload.go)
			r.Body = http.MaxBytesReader(w, r.Body, bound.limit)
			if err := parseForm(r); err != nil {
				if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
					http.Error(w, bound.refusal, http.StatusRequestEntityTooLarge)
					return
				}
				http.Error(w, "refused: unreadable form", http.StatusBadRequest)
				return
			}
			got := r.Header.Get("X-CSRF-Token")
			if got == "" {
				got = r.PostFormValue("csrf")
			}
			if !equal(got, s.csrf) {
				http.Error(w, "refused: missing or wrong CSRF token (reload the page)", http.StatusForbidden)
				return
			}
		}
		next(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, s)))
	})
}

// maxForm bounds a form body (a whole config file or persona fits).
const maxForm = 4 << 20

// parseForm reads r's form, URL-encoded or multipart (ParseMultipartForm
// alone reports a URL-encoded body's error as ErrNotMultipart).
func parseForm(r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return err
	}
	if err := r.ParseMultipartForm(maxForm); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		return err
	}
	return nil
}

func equal(a, b string) bool {
	return a != "" && b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// crossOrigin reports an Origin header naming another host. A missing one
// is fine (older browsers omit it on same-origin posts), and so is "null":
// with Referrer-Policy no-referrer, Chromium sends "null" on the console's
// own form posts. The CSRF token and the SameSite=Strict cookie still guard
// those.
func crossOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return false
	}
	u, err := url.Parse(o)
	return err != nil || u.Host != r.Host
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// setCookie writes an HttpOnly, SameSite=Strict cookie (Secure over TLS).
func setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/ui/", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

type loginData struct {
	CSRF, Next, Error string
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Query().Has("once") { // a one-time link (oncelink.go); HEAD leaves it be
		s.onceLogin(w, r, r.URL.Query().Get("once"))
		return
	}
	if s.auth.lookup(r) != nil {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	s.renderLogin(w, r, http.StatusOK, safeNext(r.FormValue("next")), "")
}

func (s *Server) renderLogin(w http.ResponseWriter, r *http.Request, code int, next, msg string) {
	pre := randomToken()
	setCookie(w, r, preCookie, pre, 3600)
	s.render(w, r, code, "login", loginData{CSRF: pre, Next: next, Error: msg})
}

func (s *Server) loginPost(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	pre, err := r.Cookie(preCookie)
	if crossOrigin(r) || err != nil || !equal(r.PostFormValue("csrf"), pre.Value) {
		http.Error(w, "refused: missing or wrong CSRF token (reload the login page)", http.StatusForbidden)
		return
	}
	next := safeNext(r.PostFormValue("next"))
	from := limitKey(r)
	if !s.adminToken(strings.TrimSpace(r.PostFormValue("token"))) {
		if !s.auth.wrongToken(from) {
			w.Header().Set("Retry-After", "60")
			s.renderLogin(w, r, http.StatusTooManyRequests, next, "Too many wrong tokens from this address: wait a minute and try again.")
			return
		}
		s.audit(r.Context(), "ui.login", "", "from "+from, "wrong token")
		s.renderLogin(w, r, http.StatusUnauthorized, next, "That is not the admin token.")
		return
	}
	s.startSession(w, r, "from "+from, next)
}

// startSession logs the browser in (a new session cookie), audits detail
// and sends it to next.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, detail, next string) {
	sess := s.auth.create()
	setCookie(w, r, preCookie, "", -1)
	setCookie(w, r, sessionCookie, sess.id, 0)
	s.audit(r.Context(), "ui.login", "", detail, "")
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	s.auth.remove(sessionOf(r))
	setCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// safeNext keeps a post-login destination inside the console.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/ui/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") ||
		strings.HasPrefix(next, "/ui/login") {
		return "/ui/"
	}
	return next
}

// audit records a console action; failures are logged, never shown.
func (s *Server) audit(ctx context.Context, action, session, detail, errText string) {
	rec := memory.AuditRecord{Time: s.o.Now(), Actor: Actor, Action: action, Session: session, Detail: detail, Error: errText}
	if err := s.o.Backend.Store().Audit(context.WithoutCancel(ctx), rec); err != nil {
		s.log.Warn("audit", "action", action, "err", err)
	}
}
