package ui

// One-time login links: `switchboard console` asks the daemon for a link
// (POST /ui/login/link with the admin token as a bearer token) and prints
// it; the browser that opens it (GET /ui/login?once=…) is logged in, like
// after typing the admin token.
//
// A link is 32 bytes from crypto/rand (hex), valid once and for
// DefaultLinkTTL unless the request asks for less (at most MaxLinkTTL). The
// console keeps only its SHA-256 in memory, at most maxLinks at a time (a
// new one drops the oldest), so links die with the daemon. Taking a link
// out of the table is the check: of browsers opening it at once, one gets
// in; only a GET uses it (HEAD does not). The bearer scheme is matched in
// any case (RFC 7235). Neither the link nor the admin token is logged or
// audited.

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Link lifetimes.
const (
	DefaultLinkTTL = 5 * time.Minute
	MaxLinkTTL     = 15 * time.Minute
)

// maxLinks bounds the links waiting to be used.
const maxLinks = 16

// LinkPath is where a login link points, before its token.
const LinkPath = "/ui/login?once="

// LoginLink is POST /ui/login/link's answer.
type LoginLink struct {
	Path    string    `json:"path"` // LinkPath + token; the client adds its base URL
	Expires time.Time `json:"expires"`
}

type onceLink struct{ created, expires time.Time }

// onceLinks holds the links not yet used, by the SHA-256 of their token.
type onceLinks struct {
	mu     sync.Mutex
	byHash map[[sha256.Size]byte]onceLink
}

func newOnceLinks() *onceLinks {
	return &onceLinks{byHash: map[[sha256.Size]byte]onceLink{}}
}

// mint makes a link token valid from now for ttl, dropping expired links
// and, at the bound, the oldest.
func (l *onceLinks) mint(now time.Time, ttl time.Duration) string {
	tok := randomToken()
	l.mu.Lock()
	defer l.mu.Unlock()
	var oldest [sha256.Size]byte
	var oldestAt time.Time
	for h, x := range l.byHash {
		if !now.Before(x.expires) {
			delete(l.byHash, h)
			continue
		}
		if oldestAt.IsZero() || x.created.Before(oldestAt) {
			oldest, oldestAt = h, x.created
		}
	}
	if len(l.byHash) >= maxLinks {
		delete(l.byHash, oldest)
	}
	l.byHash[sha256.Sum256([]byte(tok))] = onceLink{created: now, expires: now.Add(ttl)}
	return tok
}

// redeem reports whether tok is a live link, and uses it up either way.
func (l *onceLinks) redeem(now time.Time, tok string) bool {
	h := sha256.Sum256([]byte(tok))
	l.mu.Lock()
	defer l.mu.Unlock()
	x, ok := l.byHash[h]
	delete(l.byHash, h)
	return ok && now.Before(x.expires)
}

// adminToken reports whether tok is one of the admin tokens login accepts.
func (s *Server) adminToken(tok string) bool {
	return tokenOK(tok, s.o.Backend.Tokens())
}

// bearer is the token of an Authorization header "Bearer TOKEN" (the
// scheme in any case, RFC 7235), or "".
func bearer(h string) string {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// mintLink answers POST /ui/login/link: with the admin token (Authorization:
// Bearer …), a new login link (form value ttl: a Go duration, default
// DefaultLinkTTL). The token is checked first: a right one always gets a
// link; wrong ones count against the login limits (auth.go), then 429.
func (s *Server) mintLink(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if crossOrigin(r) {
		http.Error(w, "refused: the request came from another site", http.StatusForbidden)
		return
	}
	from := limitKey(r)
	got := bearer(r.Header.Get("Authorization"))
	if got == "" {
		http.Error(w, "a login link needs the admin token (Authorization: Bearer …): run `switchboard console` as the daemon's user, "+
			"who can read admin.token in bot.data_dir, or set server.admin_token", http.StatusUnauthorized)
		return
	}
	if !s.adminToken(got) {
		if !s.auth.wrongToken(from) {
			w.Header().Set("Retry-After", "60")
			http.Error(w, "too many wrong admin tokens from this address: wait a minute and try again", http.StatusTooManyRequests)
			return
		}
		s.audit(r.Context(), "ui.login-link", "", "from "+from, "wrong token")
		http.Error(w, "that is not the admin token: a login link needs server.admin_token or the token in admin.token in bot.data_dir", http.StatusUnauthorized)
		return
	}
	ttl := DefaultLinkTTL
	if v := r.FormValue("ttl"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > MaxLinkTTL {
			http.Error(w, fmt.Sprintf("ttl %q: a login link lasts more than 0 and at most %s", v, MaxLinkTTL), http.StatusBadRequest)
			return
		}
		ttl = d
	}
	now := s.o.Now()
	tok := s.auth.links.mint(now, ttl)
	s.audit(r.Context(), "ui.login-link", "", "from "+from+", valid once for "+ttl.String(), "")
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(LoginLink{Path: LinkPath + tok, Expires: now.Add(ttl).UTC()})
}

// onceLogin answers GET /ui/login?once=TOKEN: a live link logs the browser
// in and is used up; any other gets the login page saying so. HEAD (a link
// checker, a preview) gets the plain login page and leaves the link be.
func (s *Server) onceLogin(w http.ResponseWriter, r *http.Request, tok string) {
	if !s.auth.links.redeem(s.o.Now(), tok) {
		s.renderLogin(w, r, http.StatusUnauthorized, "/ui/",
			"This login link was used already or has expired: run `switchboard console` for a new one, or log in with the admin token.")
		return
	}
	s.startSession(w, r, "from "+limitKey(r)+" with a one-time login link", "/ui/")
}
