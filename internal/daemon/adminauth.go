package daemon

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/netaddr"
)

// Who may call the admin endpoints (/admin/*) without a token.
//
// A bearer token always works: server.admin_token, or the per-start token in
// <data_dir>/admin.token that local CLI commands read (admintoken.go).
// Without one, a request is accepted only when all of these hold:
//
//   - server.listen is a loopback address and server.admin_token is empty;
//   - no webhook mode is enabled (channels.telegram.mode: webhook,
//     channels.slack.mode: http): the README sets those up behind a reverse
//     proxy on the same host, and a proxied request arrives from 127.0.0.1
//     too, proxy headers or not. With a webhook mode and no admin_token the
//     daemon logs at start that token-less admin access is off;
//   - the TCP peer is a loopback address (not merely the listen address);
//   - the request carries none of the headers a proxy adds (Forwarded,
//     X-Forwarded-For, X-Real-IP, X-Forwarded-Host, X-Forwarded-Proto);
//   - it was not sent by a browser on behalf of another site: its Host is
//     localhost or a loopback address (a DNS-rebound name such as
//     evil.example resolving to 127.0.0.1 is refused), an Origin header, if
//     any, is this very host (not "null", not another port), and
//     Sec-Fetch-Site, if any, is "same-origin" or "none". Otherwise any web
//     page the operator visits could POST a form to /admin/pairing/approve
//     with its author's own pairing code, or read the sessions.
//
// A request turned away for coming through a proxy or from another site gets
// 403, any other request without a valid token 401. Wrong tokens are limited
// per client address (guessLimit): past the limit, 429.

// proxyHeaders mark a request that came through a reverse proxy.
var proxyHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Real-Ip", "X-Forwarded-Host", "X-Forwarded-Proto"}

// webhookModes names the enabled webhook modes of cfg (config keys), if any.
func webhookModes(cfg *config.Config) []string {
	var out []string
	for _, p := range cfg.Platforms().All() {
		if sec := cfg.Channels[p.Name]; sec != nil && p.WebhookMode != nil {
			if m := p.WebhookMode(sec); m != "" {
				out = append(out, m)
			}
		}
	}
	return out
}

// tokenlessAdmin reports whether cfg lets local callers use the admin
// endpoints without a token (before looking at the request).
func tokenlessAdmin(cfg *config.Config) bool {
	return cfg.Server.AdminToken.Value() == "" && netaddr.IsLoopback(cfg.Server.Listen) && len(webhookModes(cfg)) == 0
}

// viaProxy reports whether r carries a header a reverse proxy adds.
func viaProxy(r *http.Request) bool {
	for _, h := range proxyHeaders {
		if _, ok := r.Header[h]; ok {
			return true
		}
	}
	return false
}

// fromLoopbackPeer reports whether the TCP peer of r is a loopback address.
func fromLoopbackPeer(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// crossSite reports whether r was sent by a browser for another site, or
// reached the daemon under a name that is not loopback (DNS rebinding).
func crossSite(r *http.Request) bool {
	if r.Host != "" && !loopbackHost(r.Host) {
		return true
	}
	if o, ok := r.Header["Origin"]; ok {
		u, err := url.Parse(o[0])
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host != r.Host {
			return true
		}
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return false
	}
	return true
}

// loopbackHost reports whether hostport (a Host header) names localhost or a
// loopback address.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// guessLimit bounds wrong admin tokens per client address (the TCP peer;
// proxy headers are not trusted, but requests carrying them count apart from
// the peer's own): adminGuessesPerMinute a minute, with a
// burst of as many. The console's login takes the same token and limits its
// attempts; without this the token could be guessed through /admin/* at
// network speed. While an address is limited no token from it is checked,
// so a guess that would be right gains nothing; other addresses (the local
// CLI) go on.
type guessLimit struct {
	mu    sync.Mutex
	perIP map[string]*rate.Limiter
}

const adminGuessesPerMinute = 5

func newGuessLimit() *guessLimit { return &guessLimit{perIP: map[string]*rate.Limiter{}} }

func (g *guessLimit) limiter(ip string) *rate.Limiter {
	l := g.perIP[ip]
	if l == nil {
		if len(g.perIP) >= 4096 { // bounded: forget every address at once
			g.perIP = map[string]*rate.Limiter{}
		}
		l = rate.NewLimiter(rate.Limit(float64(adminGuessesPerMinute)/60), adminGuessesPerMinute)
		g.perIP[ip] = l
	}
	return l
}

// limited reports whether ip has no guess left now.
func (g *guessLimit) limited(ip string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.perIP[ip]
	return l != nil && l.TokensAt(now) < 1
}

// wrong counts a wrong token from ip.
func (g *guessLimit) wrong(ip string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.limiter(ip).AllowN(now, 1)
}

// peerIP is the TCP peer's address of r.
func peerIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
