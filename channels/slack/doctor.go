package slack

import (
	"context"
	"errors"
	"fmt"

	slackapi "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels/platform"
)

// This file is Slack's part of `switchboard doctor` (Platform.Doctor and
// Platform.WebhookDoctor): auth.test with the bot token, apps.connections.open
// with the app-level token in socket mode, and http mode's signing secret.

// defaultAPIURL is the Web API base the client library uses.
const defaultAPIURL = "https://slack.com/api/"

const (
	botTokenFix = "set SLACK_BOT_TOKEN to the app's Bot User OAuth Token (xoxb-…, OAuth & Permissions page; reinstall the app if it was revoked)"
	appTokenFix = "set SLACK_APP_TOKEN to an app-level token (xapp-…) with the connections:write scope (Basic Information → App-Level Tokens) and enable Socket Mode"
)

// doctorAuth runs auth.test and, in socket mode, apps.connections.open (the
// WebSocket URL it issues is never dialed).
func doctorAuth(ctx context.Context, s platform.Section, deps platform.Deps) platform.CheckResult {
	sl := s.(*Config)
	api := sl.APIURL
	if api == "" {
		api = defaultAPIURL
	}
	shown := platform.ShownURL(api)
	if !sl.BotToken.IsSet() {
		return platform.CheckResult{Status: platform.StatusFail, Finding: "channels.slack is enabled but bot_token is empty", Fix: botTokenFix}
	}
	client := slackapi.New(sl.BotToken.Value(),
		slackapi.OptionAPIURL(api),
		slackapi.OptionHTTPClient(deps.Client()),
		slackapi.OptionAppLevelToken(sl.AppToken.Value()),
	)
	f := &platform.Findings{}
	auth, err := client.AuthTestContext(ctx)
	if err != nil {
		r := doctorError(ctx, err, shown, "auth.test", "bot token", botTokenFix, deps)
		f.Add(r.Status, r.Finding, r.Fix)
		return f.Result()
	}
	f.Add(platform.StatusOK, fmt.Sprintf("auth.test at %s: bot %s (%s) in team %s", shown, auth.User, auth.UserID, auth.Team), "")
	if sl.Mode == "socket" {
		switch {
		case !sl.AppToken.IsSet():
			f.Add(platform.StatusFail, "socket mode needs an app-level token and app_token is empty", appTokenFix)
		default:
			if _, _, err := client.StartSocketModeContext(ctx); err != nil {
				r := doctorError(ctx, err, shown, "apps.connections.open", "app-level token", appTokenFix, deps)
				f.Add(r.Status, r.Finding, r.Fix)
			} else {
				f.Add(platform.StatusOK, "apps.connections.open issued a Socket Mode URL (not dialed)", "")
			}
		}
	}
	return f.Result()
}

// doctorError words a failed Web API call to method made with token.
func doctorError(ctx context.Context, err error, shown, method, token, fix string, deps platform.Deps) platform.CheckResult {
	var se slackapi.SlackErrorResponse
	var sep *slackapi.SlackErrorResponse
	code := ""
	switch {
	case errors.As(err, &se):
		code = se.Err
	case errors.As(err, &sep):
		code = sep.Err
	}
	fail := func(finding, fix string) platform.CheckResult {
		return platform.CheckResult{Status: platform.StatusFail, Finding: finding, Fix: fix}
	}
	var rl *slackapi.RateLimitedError
	var sc slackapi.StatusCodeError
	switch {
	case code == "invalid_auth" || code == "not_authed" || code == "account_inactive" ||
		code == "token_revoked" || code == "token_expired" || code == "not_allowed_token_type":
		return fail(fmt.Sprintf("Slack rejected the %s: %s answered %s", token, method, code), fix)
	case code != "":
		return fail(fmt.Sprintf("%s at %s answered %s", method, shown, code), fix)
	case errors.As(err, &rl):
		return platform.CheckResult{Status: platform.StatusWarn, Finding: fmt.Sprintf("%s is rate limited (retry after %s)", method, rl.RetryAfter),
			Fix: "wait a minute and run doctor again"}
	case errors.As(err, &sc):
		return fail(fmt.Sprintf("%s at %s answered HTTP %d", method, shown, sc.Code),
			"check channels.slack.api_url (the Web API base ending in /api/; empty means slack.com)")
	}
	if what, nfix, ok := platform.DescribeNetErr(ctx, err, shown, deps.Timeout); ok {
		return fail(what, nfix+" (channels.slack.api_url; empty means slack.com)")
	}
	return fail(fmt.Sprintf("%s at %s failed: %s", method, shown, platform.OneLine(err.Error())),
		"check channels.slack.api_url (the Web API base ending in /api/)")
}

// doctorWebhook checks http mode: the signing secret every event is
// verified with, and the HTTP server the events arrive at.
func doctorWebhook(s platform.Section, env platform.Env) []platform.CheckResult {
	sl := s.(*Config)
	var out []platform.CheckResult
	if !sl.SigningSecret.IsSet() {
		out = append(out, platform.CheckResult{Status: platform.StatusFail, Finding: "slack http mode has no signing secret: every event would be rejected",
			Fix: "set SLACK_SIGNING_SECRET to the app's Signing Secret (Basic Information page)"})
	} else {
		out = append(out, platform.CheckResult{Status: platform.StatusOK, Finding: "slack signing secret is set"})
	}
	if env.Listen == "" {
		out = append(out, platform.CheckResult{Status: platform.StatusFail, Finding: "slack http mode needs server.listen",
			Fix: "set server.listen (e.g. 127.0.0.1:8787) behind your public HTTPS endpoint"})
	}
	return out
}
