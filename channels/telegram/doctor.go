package telegram

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/go-telegram/bot"

	"github.com/switchboard-bot/switchboard/channels/platform"
)

// This file is Telegram's part of `switchboard doctor` (Platform.Doctor and
// Platform.WebhookDoctor): getMe with the token, and the webhook's URL and
// secret.

// defaultServer is the Bot API server root the client library uses.
const defaultServer = "https://api.telegram.org"

const tokenFix = "set TELEGRAM_BOT_TOKEN to the token @BotFather gave the bot (123456789:AA…); /token in @BotFather shows it again"

// doctorGetMe asks getMe who the token belongs to.
func doctorGetMe(ctx context.Context, s platform.Section, deps platform.Deps) platform.CheckResult {
	tg := s.(*Config)
	server := strings.TrimRight(tg.APIURL, "/")
	if server == "" {
		server = defaultServer
	}
	shown := platform.ShownURL(server)
	fail := func(finding, fix string) platform.CheckResult {
		return platform.CheckResult{Status: platform.StatusFail, Finding: finding, Fix: fix}
	}
	if !tg.Token.IsSet() {
		return fail("channels.telegram is enabled but its token is empty", tokenFix)
	}
	b, err := bot.New(tg.Token.Value(),
		bot.WithServerURL(server),
		bot.WithSkipGetMe(),
		bot.WithHTTPClient(deps.Timeout, deps.Client()),
		bot.WithErrorsHandler(func(error) {}),
	)
	if err != nil {
		return fail("the Telegram client refused the configuration: "+platform.OneLine(err.Error()), tokenFix)
	}
	me, err := b.GetMe(ctx)
	switch {
	case err == nil:
		return platform.CheckResult{Status: platform.StatusOK, Finding: fmt.Sprintf("getMe at %s: the token belongs to @%s (id %d)", shown, me.Username, me.ID)}
	case errors.Is(err, bot.ErrorUnauthorized), errors.Is(err, bot.ErrorNotFound):
		// Telegram answers 404 to a malformed token and 401 to a revoked one.
		return fail(fmt.Sprintf("Telegram (%s) rejected the bot token", shown), tokenFix)
	}
	if what, nfix, ok := platform.DescribeNetErr(ctx, err, shown, deps.Timeout); ok {
		return fail(what, nfix+" (channels.telegram.api_url; empty means api.telegram.org)")
	}
	return fail(fmt.Sprintf("getMe at %s failed: %s", shown, platform.OneLine(err.Error())),
		"check channels.telegram.api_url (the Bot API server root) and TELEGRAM_BOT_TOKEN")
}

// webhookSecretRe and maxWebhookSecret are what setWebhook accepts as
// secret_token (the length apart: {1,256} compiles to a ~100 KB program).
var webhookSecretRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

const maxWebhookSecret = 256

// doctorWebhook checks webhook mode's URL (https, as Telegram requires) and
// secret (what setWebhook accepts).
func doctorWebhook(s platform.Section, _ platform.Env) []platform.CheckResult {
	tg := s.(*Config)
	var out []platform.CheckResult
	add := func(status, finding, fix string) {
		out = append(out, platform.CheckResult{Status: status, Finding: finding, Fix: fix})
	}
	switch {
	case tg.WebhookURL == "":
		add(platform.StatusFail, "telegram webhook mode has no channels.telegram.webhook_url",
			"set channels.telegram.webhook_url to the public https:// URL that reaches server.listen (e.g. through a TLS reverse proxy)")
	case !strings.HasPrefix(strings.ToLower(tg.WebhookURL), "https://"):
		add(platform.StatusFail, fmt.Sprintf("telegram webhook_url %s is not https: Telegram only delivers updates to https URLs", platform.ShownURL(tg.WebhookURL)),
			"serve the webhook through TLS (a reverse proxy in front of server.listen) and set channels.telegram.webhook_url to its https:// URL, or use mode: polling")
	default:
		add(platform.StatusOK, "telegram webhook_url is https", "")
	}
	switch sec := tg.WebhookSecret.Value(); {
	case sec == "":
		add(platform.StatusWarn, "telegram webhook_secret is empty: forged updates posted to the webhook cannot be told apart",
			"set channels.telegram.webhook_secret (e.g. ${TELEGRAM_WEBHOOK_SECRET}, 1–256 characters of A-Z a-z 0-9 _ -)")
	case len(sec) > maxWebhookSecret || !webhookSecretRe.MatchString(sec):
		add(platform.StatusFail, "telegram webhook_secret has characters (or a length) Telegram's setWebhook rejects",
			"use 1–256 characters of A-Z a-z 0-9 _ - only, e.g. the output of `openssl rand -hex 32`")
	default:
		add(platform.StatusOK, "telegram webhook_secret is set", "")
	}
	return out
}
