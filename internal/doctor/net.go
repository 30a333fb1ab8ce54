package doctor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"syscall"

	"github.com/bwmarrin/discordgo"
	"github.com/go-telegram/bot"
	"github.com/sashabaranov/go-openai"
	"github.com/slack-go/slack"

	chdiscord "github.com/switchboard-bot/switchboard/channels/discord"
	"github.com/switchboard-bot/switchboard/channels/platform"
	chslack "github.com/switchboard-bot/switchboard/channels/slack"
	chtelegram "github.com/switchboard-bot/switchboard/channels/telegram"
	"github.com/switchboard-bot/switchboard/internal/config"
)

// Default endpoints, as the client libraries use them.
const (
	openAIBaseURL   = "https://api.openai.com/v1"
	telegramBaseURL = "https://api.telegram.org"
	slackBaseURL    = "https://slack.com/api/"
	discordBaseURL  = "https://discord.com"
)

// ---- model endpoint ----

func (d *doctor) checkModel(ctx context.Context) Result {
	l := d.cfg.LLM
	base := strings.TrimRight(l.BaseURL, "/")
	defaultEP := base == ""
	if defaultEP {
		base = openAIBaseURL
	}
	shown := redactURL(base)
	if !l.APIKey.IsSet() && (defaultEP || isOpenAIHost(base)) {
		return Result{Status: StatusFail,
			Finding: "llm.api_key is empty and the model endpoint is OpenAI's, which needs a key",
			Fix:     "set OPENAI_API_KEY to your OpenAI API key, or set OPENAI_BASE_URL (llm.base_url) to a local OpenAI-compatible server such as http://127.0.0.1:11434/v1 (Ollama)"}
	}
	oc := openai.DefaultConfig(l.APIKey.Value())
	oc.BaseURL = base
	oc.HTTPClient = d.opts.HTTPClient
	list, err := openai.NewClientWithConfig(oc).ListModels(ctx)
	if err != nil {
		return d.modelError(ctx, shown, l.APIKey.IsSet(), err)
	}
	ids := make([]string, 0, len(list.Models))
	for _, m := range list.Models {
		ids = append(ids, m.ID)
	}
	if len(ids) > 0 && !slices.Contains(ids, l.Model) {
		slices.Sort(ids)
		some := ids
		if len(some) > 8 {
			some = append(slices.Clone(some[:8]), "…")
		}
		return Result{Status: StatusWarn,
			Finding: fmt.Sprintf("%s answered, but llm.model %q is not among the %d models it lists", shown, l.Model, len(ids)),
			Fix:     "set llm.model to one of: " + strings.Join(some, ", ") + " (or pull/deploy the model on the server)"}
	}
	what := fmt.Sprintf("%s answered with a valid key; model %q is available", shown, l.Model)
	if len(ids) == 0 {
		what = fmt.Sprintf("%s answered with a valid key (it lists no models, so %q could not be confirmed)", shown, l.Model)
	}
	return Result{Status: StatusOK, Finding: what}
}

func (d *doctor) modelError(ctx context.Context, shown string, keySet bool, err error) Result {
	status, msg := 0, ""
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		status, msg = apiErr.HTTPStatusCode, apiErr.Message
	case errors.As(err, &reqErr) && reqErr.HTTPStatusCode > 0:
		status = reqErr.HTTPStatusCode
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		if !keySet {
			return Result{Status: StatusFail,
				Finding: fmt.Sprintf("%s requires an API key (HTTP %d) and llm.api_key is empty", shown, status),
				Fix:     "set OPENAI_API_KEY (read by llm.api_key) to a key this endpoint accepts"}
		}
		return Result{Status: StatusFail,
			Finding: fmt.Sprintf("the model endpoint rejected the API key: %s answered HTTP %d", shown, status),
			Fix:     "set OPENAI_API_KEY (read by llm.api_key) to a valid key for this endpoint"}
	case status == http.StatusNotFound:
		return Result{Status: StatusWarn,
			Finding: fmt.Sprintf("%s/models answered 404: the server does not list models, or llm.base_url lacks the /v1 part", shown),
			Fix:     "check that llm.base_url ends with /v1 (e.g. http://127.0.0.1:11434/v1); if the server simply has no /models, nothing to do"}
	case status == http.StatusTooManyRequests:
		return Result{Status: StatusWarn,
			Finding: fmt.Sprintf("%s is rate limiting this key (HTTP 429)", shown),
			Fix:     "check the account's quota and billing, or lower agent.max_concurrent_turns"}
	case status >= 500:
		return Result{Status: StatusFail,
			Finding: fmt.Sprintf("%s is failing (HTTP %d)", shown, status),
			Fix:     "check the model server's logs or the provider's status page, then run doctor again"}
	case status > 0:
		what := fmt.Sprintf("%s answered HTTP %d to GET /models", shown, status)
		if msg != "" {
			what += ": " + oneLine(msg)
		}
		return Result{Status: StatusFail, Finding: what, Fix: "check llm.base_url and llm.api_key against the provider's documentation"}
	}
	if what, fix, ok := describeNetErr(ctx, err, shown, d.opts); ok {
		return Result{Status: StatusFail, Finding: what, Fix: fix + " (llm.base_url, OPENAI_BASE_URL)"}
	}
	return Result{Status: StatusFail,
		Finding: fmt.Sprintf("%s did not answer like an OpenAI-compatible API: %s", shown, oneLine(err.Error())),
		Fix:     "llm.base_url must be the API base up to and including /v1 (e.g. http://127.0.0.1:11434/v1)"}
}

func isOpenAIHost(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

// ---- Telegram ----

func (d *doctor) checkTelegram(ctx context.Context) Result {
	tg := platform.Get[*chtelegram.Config](d.cfg.Channels, chtelegram.Name)
	server := strings.TrimRight(tg.APIURL, "/")
	if server == "" {
		server = telegramBaseURL
	}
	shown := redactURL(server)
	const fix = "set TELEGRAM_BOT_TOKEN to the token @BotFather gave the bot (123456789:AA…); /token in @BotFather shows it again"
	if !tg.Token.IsSet() {
		return Result{Status: StatusFail, Finding: "channels.telegram is enabled but its token is empty", Fix: fix}
	}
	b, err := bot.New(tg.Token.Value(),
		bot.WithServerURL(server),
		bot.WithSkipGetMe(),
		bot.WithHTTPClient(d.opts.Timeout, d.opts.HTTPClient),
		bot.WithErrorsHandler(func(error) {}),
	)
	if err != nil {
		return Result{Status: StatusFail, Finding: "the Telegram client refused the configuration: " + oneLine(err.Error()), Fix: fix}
	}
	me, err := b.GetMe(ctx)
	switch {
	case err == nil:
		return Result{Status: StatusOK, Finding: fmt.Sprintf("getMe at %s: the token belongs to @%s (id %d)", shown, me.Username, me.ID)}
	case errors.Is(err, bot.ErrorUnauthorized), errors.Is(err, bot.ErrorNotFound):
		// Telegram answers 404 to a malformed token and 401 to a revoked one.
		return Result{Status: StatusFail, Finding: fmt.Sprintf("Telegram (%s) rejected the bot token", shown), Fix: fix}
	}
	if what, nfix, ok := describeNetErr(ctx, err, shown, d.opts); ok {
		return Result{Status: StatusFail, Finding: what, Fix: nfix + " (channels.telegram.api_url; empty means api.telegram.org)"}
	}
	return Result{Status: StatusFail, Finding: fmt.Sprintf("getMe at %s failed: %s", shown, oneLine(err.Error())),
		Fix: "check channels.telegram.api_url (the Bot API server root) and TELEGRAM_BOT_TOKEN"}
}

// ---- Slack ----

func (d *doctor) checkSlack(ctx context.Context) Result {
	sl := platform.Get[*chslack.Config](d.cfg.Channels, chslack.Name)
	api := sl.APIURL
	if api == "" {
		api = slackBaseURL
	}
	shown := redactURL(api)
	const botFix = "set SLACK_BOT_TOKEN to the app's Bot User OAuth Token (xoxb-…, OAuth & Permissions page; reinstall the app if it was revoked)"
	const appFix = "set SLACK_APP_TOKEN to an app-level token (xapp-…) with the connections:write scope (Basic Information → App-Level Tokens) and enable Socket Mode"
	if !sl.BotToken.IsSet() {
		return Result{Status: StatusFail, Finding: "channels.slack is enabled but bot_token is empty", Fix: botFix}
	}
	client := slack.New(sl.BotToken.Value(),
		slack.OptionAPIURL(api),
		slack.OptionHTTPClient(d.opts.HTTPClient),
		slack.OptionAppLevelToken(sl.AppToken.Value()),
	)
	f := &finding{}
	auth, err := client.AuthTestContext(ctx)
	if err != nil {
		r := d.slackError(ctx, err, shown, "auth.test", "bot token", botFix)
		f.add(r.Status, r.Finding, r.Fix)
		return f.result(CheckSlack)
	}
	f.add(StatusOK, fmt.Sprintf("auth.test at %s: bot %s (%s) in team %s", shown, auth.User, auth.UserID, auth.Team), "")
	if sl.Mode == "socket" {
		switch {
		case !sl.AppToken.IsSet():
			f.add(StatusFail, "socket mode needs an app-level token and app_token is empty", appFix)
		default:
			if _, _, err := client.StartSocketModeContext(ctx); err != nil {
				r := d.slackError(ctx, err, shown, "apps.connections.open", "app-level token", appFix)
				f.add(r.Status, r.Finding, r.Fix)
			} else {
				f.add(StatusOK, "apps.connections.open issued a Socket Mode URL (not dialed)", "")
			}
		}
	}
	return f.result(CheckSlack)
}

func (d *doctor) slackError(ctx context.Context, err error, shown, method, token, fix string) Result {
	var se slack.SlackErrorResponse
	var sep *slack.SlackErrorResponse
	code := ""
	switch {
	case errors.As(err, &se):
		code = se.Err
	case errors.As(err, &sep):
		code = sep.Err
	}
	var rl *slack.RateLimitedError
	var sc slack.StatusCodeError
	switch {
	case code == "invalid_auth" || code == "not_authed" || code == "account_inactive" ||
		code == "token_revoked" || code == "token_expired" || code == "not_allowed_token_type":
		return Result{Status: StatusFail, Finding: fmt.Sprintf("Slack rejected the %s: %s answered %s", token, method, code), Fix: fix}
	case code != "":
		return Result{Status: StatusFail, Finding: fmt.Sprintf("%s at %s answered %s", method, shown, code), Fix: fix}
	case errors.As(err, &rl):
		return Result{Status: StatusWarn, Finding: fmt.Sprintf("%s is rate limited (retry after %s)", method, rl.RetryAfter),
			Fix: "wait a minute and run doctor again"}
	case errors.As(err, &sc):
		return Result{Status: StatusFail, Finding: fmt.Sprintf("%s at %s answered HTTP %d", method, shown, sc.Code),
			Fix: "check channels.slack.api_url (the Web API base ending in /api/; empty means slack.com)"}
	}
	if what, nfix, ok := describeNetErr(ctx, err, shown, d.opts); ok {
		return Result{Status: StatusFail, Finding: what, Fix: nfix + " (channels.slack.api_url; empty means slack.com)"}
	}
	return Result{Status: StatusFail, Finding: fmt.Sprintf("%s at %s failed: %s", method, shown, oneLine(err.Error())),
		Fix: "check channels.slack.api_url (the Web API base ending in /api/)"}
}

// ---- Discord ----

func (d *doctor) checkDiscord(ctx context.Context) Result {
	dc := platform.Get[*chdiscord.Config](d.cfg.Channels, chdiscord.Name)
	const fix = "set DISCORD_BOT_TOKEN to the bot's token (Developer Portal → your app → Bot → Reset Token)"
	tok := strings.TrimPrefix(strings.TrimSpace(dc.Token.Value()), "Bot ")
	if tok == "" {
		return Result{Status: StatusFail, Finding: "channels.discord is enabled but its token is empty", Fix: fix}
	}
	shown := discordBaseURL
	var api *url.URL
	if dc.APIURL != "" {
		u, err := url.Parse(dc.APIURL)
		if err != nil || u.Host == "" {
			return Result{Status: StatusFail, Finding: "channels.discord.api_url is not a URL", Fix: "set it to scheme://host:port, e.g. http://127.0.0.1:9001"}
		}
		api, shown = u, redactURL(dc.APIURL)
	}
	s, err := discordgo.New("Bot " + tok)
	if err != nil {
		return Result{Status: StatusFail, Finding: "the Discord client refused the token: " + oneLine(err.Error()), Fix: fix}
	}
	cl := *d.opts.HTTPClient
	base := cl.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cl.Transport = &discordRewrite{base: base, api: api}
	s.Client = &cl
	s.ShouldRetryOnRateLimit = false
	s.MaxRestRetries = 0
	me, err := s.User("@me", discordgo.WithContext(ctx))
	if err == nil {
		return Result{Status: StatusOK, Finding: fmt.Sprintf("GET /users/@me at %s: the token belongs to %s (id %s)", shown, me.Username, me.ID)}
	}
	var re *discordgo.RESTError
	var rl *discordgo.RateLimitError
	switch {
	case errors.As(err, &re) && re.Response != nil:
		code := re.Response.StatusCode
		if code == http.StatusUnauthorized || code == http.StatusForbidden {
			return Result{Status: StatusFail, Finding: fmt.Sprintf("Discord (%s) rejected the bot token (HTTP %d)", shown, code), Fix: fix}
		}
		return Result{Status: StatusFail, Finding: fmt.Sprintf("GET /users/@me at %s answered HTTP %d", shown, code),
			Fix: "check channels.discord.api_url (scheme://host:port; empty means discord.com)"}
	case errors.As(err, &rl):
		return Result{Status: StatusWarn, Finding: "Discord is rate limiting this bot", Fix: "wait a minute and run doctor again"}
	}
	if what, nfix, ok := describeNetErr(ctx, err, shown, d.opts); ok {
		return Result{Status: StatusFail, Finding: what, Fix: nfix + " (channels.discord.api_url; empty means discord.com)"}
	}
	return Result{Status: StatusFail, Finding: fmt.Sprintf("GET /users/@me at %s failed: %s", shown, oneLine(err.Error())),
		Fix: "check channels.discord.api_url and DISCORD_BOT_TOKEN"}
}

// discordRewrite points discordgo's fixed https://discord.com/api/v9/...
// URLs at api (scheme and host only; the path is kept), as the Discord
// adapter does. With api nil requests pass through unchanged.
type discordRewrite struct {
	base http.RoundTripper
	api  *url.URL
}

func (t *discordRewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	host := strings.ToLower(req.URL.Hostname())
	if t.api == nil || (host != "discord.com" && !strings.HasSuffix(host, ".discord.com") &&
		host != "discordapp.com" && !strings.HasSuffix(host, ".discordapp.com")) {
		return t.base.RoundTrip(req)
	}
	r2 := req.Clone(req.Context())
	r2.URL.Scheme = t.api.Scheme
	r2.URL.Host = t.api.Host
	r2.Host = ""
	return t.base.RoundTrip(r2)
}

// ---- shared helpers ----

// describeNetErr classifies transport failures (no HTTP answer at all).
func describeNetErr(ctx context.Context, err error, shown string, opts Options) (what, fix string, ok bool) {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var opErr *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("cannot connect to %s: connection refused", shown),
			"start the server or correct the URL", true
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || isTimeout(err):
		return fmt.Sprintf("no answer from %s within %s", shown, opts.Timeout),
			"check that the host is up and reachable from here (firewall, proxy, HTTPS_PROXY) or correct the URL", true
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("cannot resolve %s (%s)", dnsErr.Name, shown),
			"check the host name and this machine's DNS", true
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr):
		return fmt.Sprintf("TLS certificate of %s is not trusted", shown),
			"install the CA certificate the server uses, or fix the host name in the URL", true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH), errors.As(err, &opErr):
		return fmt.Sprintf("cannot reach %s: %s", shown, oneLine(rootCause(err).Error())),
			"check the network path to the host or correct the URL", true
	}
	return "", "", false
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// redactURL is config.RedactURL: credentials in user info and query become
// "[redacted]".
func redactURL(raw string) string {
	if raw == "" {
		return "the configured URL"
	}
	return config.RedactURL(raw)
}

// oneLine keeps a server or library message to one short line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}
