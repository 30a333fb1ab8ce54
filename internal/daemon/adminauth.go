package daemon

import (
	"net"
	"net/http"

	"github.com/switchboard-bot/switchboard/internal/config"
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
//     X-Forwarded-For, X-Real-IP, X-Forwarded-Host, X-Forwarded-Proto).
//
// A request turned away for coming through a proxy gets 403, any other
// request without a valid token 401.

// proxyHeaders mark a request that came through a reverse proxy.
var proxyHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Real-Ip", "X-Forwarded-Host", "X-Forwarded-Proto"}

// webhookModes names the enabled webhook modes of cfg (config keys), if any.
func webhookModes(cfg *config.Config) []string {
	var out []string
	if tg := cfg.Channels.Telegram; tg.Enabled && tg.Mode == "webhook" {
		out = append(out, "channels.telegram.mode: webhook")
	}
	if sl := cfg.Channels.Slack; sl.Enabled && sl.Mode == "http" {
		out = append(out, "channels.slack.mode: http")
	}
	return out
}

// tokenlessAdmin reports whether cfg lets local callers use the admin
// endpoints without a token (before looking at the request).
func tokenlessAdmin(cfg *config.Config) bool {
	return cfg.Server.AdminToken.Value() == "" && isLoopback(cfg.Server.Listen) && len(webhookModes(cfg)) == 0
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
