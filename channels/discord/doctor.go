package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels/platform"
)

// This file is Discord's part of `switchboard doctor` (Platform.Doctor):
// GET /users/@me with the token, through discordgo and the adapter's
// rewriteTransport (channels.discord.api_url).

// defaultAPI is the API host discordgo calls.
const defaultAPI = "https://discord.com"

const tokenFix = "set DISCORD_BOT_TOKEN to the bot's token (Developer Portal → your app → Bot → Reset Token)"

// doctorMe asks who the token belongs to.
func doctorMe(ctx context.Context, s platform.Section, deps platform.Deps) platform.CheckResult {
	dc := s.(*Config)
	fail := func(finding, fix string) platform.CheckResult {
		return platform.CheckResult{Status: platform.StatusFail, Finding: finding, Fix: fix}
	}
	tok := strings.TrimPrefix(strings.TrimSpace(dc.Token.Value()), "Bot ")
	if tok == "" {
		return fail("channels.discord is enabled but its token is empty", tokenFix)
	}
	shown := defaultAPI
	var api *url.URL
	if dc.APIURL != "" {
		u, err := url.Parse(dc.APIURL)
		if err != nil || u.Host == "" {
			return fail("channels.discord.api_url is not a URL", "set it to scheme://host:port, e.g. http://127.0.0.1:9001")
		}
		api, shown = u, platform.ShownURL(dc.APIURL)
	}
	sess, err := discordgo.New("Bot " + tok)
	if err != nil {
		return fail("the Discord client refused the token: "+platform.OneLine(err.Error()), tokenFix)
	}
	cl := *deps.Client()
	base := cl.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cl.Transport = &rewriteTransport{base: base, api: api}
	sess.Client = &cl
	sess.ShouldRetryOnRateLimit = false
	sess.MaxRestRetries = 0
	me, err := sess.User("@me", discordgo.WithContext(ctx))
	if err == nil {
		return platform.CheckResult{Status: platform.StatusOK, Finding: fmt.Sprintf("GET /users/@me at %s: the token belongs to %s (id %s)", shown, me.Username, me.ID)}
	}
	var re *discordgo.RESTError
	var rl *discordgo.RateLimitError
	switch {
	case errors.As(err, &re) && re.Response != nil:
		code := re.Response.StatusCode
		if code == http.StatusUnauthorized || code == http.StatusForbidden {
			return fail(fmt.Sprintf("Discord (%s) rejected the bot token (HTTP %d)", shown, code), tokenFix)
		}
		return fail(fmt.Sprintf("GET /users/@me at %s answered HTTP %d", shown, code),
			"check channels.discord.api_url (scheme://host:port; empty means discord.com)")
	case errors.As(err, &rl):
		return platform.CheckResult{Status: platform.StatusWarn, Finding: "Discord is rate limiting this bot", Fix: "wait a minute and run doctor again"}
	}
	if what, nfix, ok := platform.DescribeNetErr(ctx, err, shown, deps.Timeout); ok {
		return fail(what, nfix+" (channels.discord.api_url; empty means discord.com)")
	}
	return fail(fmt.Sprintf("GET /users/@me at %s failed: %s", shown, platform.OneLine(err.Error())),
		"check channels.discord.api_url and DISCORD_BOT_TOKEN")
}
