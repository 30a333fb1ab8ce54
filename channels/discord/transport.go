package discord

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// rewriteTransport points discordgo at another API host and answers gateway
// discovery locally when a gateway URL override is configured.
type rewriteTransport struct {
	base    http.RoundTripper
	api     *url.URL
	gateway string
}

func isDiscordHost(host string) bool {
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	host = strings.ToLower(host)
	return host == "discord.com" || strings.HasSuffix(host, ".discord.com") ||
		host == "discordapp.com" || strings.HasSuffix(host, ".discordapp.com") ||
		strings.HasSuffix(host, ".discordapp.net") || host == "discord.gg"
}

func (t *rewriteTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !isDiscordHost(req.URL.Host) {
		return t.base.RoundTrip(req)
	}
	p := req.URL.Path
	if t.gateway != "" && req.Method == http.MethodGet && strings.HasPrefix(p, "/api/") &&
		(strings.HasSuffix(p, "/gateway") || strings.HasSuffix(p, "/gateway/bot")) {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		payload := map[string]any{"url": t.gateway}
		if strings.HasSuffix(p, "/bot") {
			payload["shards"] = 1
		}
		b, _ := json.Marshal(payload)
		return &http.Response{
			Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:        http.Header{"Content-Type": []string{"application/json"}},
			Body:          io.NopCloser(strings.NewReader(string(b))),
			ContentLength: int64(len(b)), Request: req,
		}, nil
	}
	if t.api == nil {
		return t.base.RoundTrip(req)
	}
	r2 := req.Clone(req.Context())
	r2.URL.Scheme = t.api.Scheme
	r2.URL.Host = t.api.Host
	r2.Host = ""
	return t.base.RoundTrip(r2)
}
