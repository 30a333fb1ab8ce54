package whatsapp

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboard-bot/switchboard/channels/platform"
)

// This file is WhatsApp's part of `switchboard doctor`: the access token and
// the phone number id checked with GET /{phone-number-id}, the app secret
// with the same request's appsecret_proof (Graph refuses a proof made with
// another app's secret), and the webhook's settings.

const (
	tokenFix  = "set WHATSAPP_ACCESS_TOKEN to a system user's permanent token with the whatsapp_business_messaging permission (Business settings → System users); temporary tokens expire after 24 hours"
	phoneFix  = "set channels.whatsapp.phone_number_id to the Phone number ID shown in WhatsApp Manager → API setup (not the phone number itself)"
	secretFix = "set WHATSAPP_APP_SECRET to the App secret of the app the token belongs to (App settings → Basic)"
)

// appSecretProof is hex HMAC-SHA256(app secret, access token).
func appSecretProof(secret, token string) string {
	m := hmac.New(sha256.New, []byte(secret))
	_, _ = m.Write([]byte(token))
	return hex.EncodeToString(m.Sum(nil))
}

// doctorAPI reads the phone number's record with the configured token, the
// app secret's proof attached.
func doctorAPI(ctx context.Context, s platform.Section, deps platform.Deps) platform.CheckResult {
	c := s.(*Config)
	fail := func(finding, fix string) platform.CheckResult {
		return platform.CheckResult{Status: platform.StatusFail, Finding: finding, Fix: fix}
	}
	switch {
	case !c.AccessToken.IsSet():
		return fail("channels.whatsapp is enabled but access_token is empty", tokenFix)
	case c.PhoneNumberID == "":
		return fail("channels.whatsapp is enabled but phone_number_id is empty", phoneFix)
	}
	opts := c.options(deps)
	opts.HTTPClient = deps.Client()
	if opts.AppSecret == "" {
		opts.AppSecret = "-" // New needs one; the proof below is skipped
	}
	a, err := New(opts)
	if err != nil {
		return fail(err.Error(), tokenFix)
	}
	api := c.APIURL
	if api == "" {
		api = DefaultAPIURL
	}
	shown := platform.ShownURL(api)
	proof := ""
	if c.AppSecret.IsSet() {
		proof = appSecretProof(c.AppSecret.Value(), c.AccessToken.Value())
	}
	info, err := a.phoneNumber(ctx, proof)
	if err != nil {
		return doctorError(ctx, err, shown, c, deps)
	}
	f := &platform.Findings{}
	f.Add(platform.StatusOK, fmt.Sprintf("GET /%s/%s at %s: %s (%s), quality %s", APIVersion, c.PhoneNumberID, shown,
		info.DisplayPhoneNumber, info.VerifiedName, strings.ToLower(orUnknown(info.QualityRating))), "")
	if c.AppSecret.IsSet() {
		f.Add(platform.StatusOK, "the app secret matches the token's app (appsecret_proof accepted)", "")
	} else {
		f.Add(platform.StatusFail, "app_secret is empty: every webhook delivery would be refused", secretFix)
	}
	return f.Result()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// doctorError words a failed Graph call.
func doctorError(ctx context.Context, err error, shown string, c *Config, deps platform.Deps) platform.CheckResult {
	fail := func(finding, fix string) platform.CheckResult {
		return platform.CheckResult{Status: platform.StatusFail, Finding: finding, Fix: fix}
	}
	var ge *GraphError
	var te *transportError
	switch {
	case errors.As(err, &ge):
		msg := platform.OneLine(ge.Message)
		switch {
		case strings.Contains(strings.ToLower(ge.Message), "appsecret_proof"):
			return fail("WhatsApp refused the app secret: "+msg, secretFix)
		case ge.Code == 190 || ge.Status == 401:
			return fail("WhatsApp refused the access token: "+msg, tokenFix)
		case ge.Code == 10 || ge.Code == 200 || ge.Code == 3:
			return fail("the access token lacks a permission: "+msg, tokenFix)
		case ge.Code == 100 || ge.Status == 404:
			return fail(fmt.Sprintf("phone number id %s is unknown to WhatsApp or not visible to this token: %s", c.PhoneNumberID, msg), phoneFix)
		case ge.Status == 429 || rateLimitCodes[ge.Code] > 0:
			return platform.CheckResult{Status: platform.StatusWarn, Finding: "WhatsApp is rate limiting this app: " + msg, Fix: "wait a minute and run doctor again"}
		}
		return fail(fmt.Sprintf("GET /%s/%s at %s: %s", APIVersion, c.PhoneNumberID, shown, ge.Error()),
			"check channels.whatsapp.api_url (the Graph API root; empty means graph.facebook.com)")
	case errors.As(err, &te):
		if what, fix, ok := platform.DescribeNetErr(ctx, te.err, shown, deps.Timeout); ok {
			return fail(what, fix+" (channels.whatsapp.api_url; empty means graph.facebook.com)")
		}
	}
	return fail(fmt.Sprintf("GET /%s/%s at %s failed: %s", APIVersion, c.PhoneNumberID, shown, platform.OneLine(err.Error())),
		"check channels.whatsapp.api_url (the Graph API root)")
}

// doctorWebhook checks what the webhook needs: the app secret every delivery
// is verified with, the verify token of the subscription, the HTTP server.
func doctorWebhook(s platform.Section, env platform.Env) []platform.CheckResult {
	c := s.(*Config)
	var out []platform.CheckResult
	if !c.AppSecret.IsSet() {
		out = append(out, platform.CheckResult{Status: platform.StatusFail, Finding: "whatsapp has no app secret: every webhook delivery would be refused", Fix: secretFix})
	}
	if !c.VerifyToken.IsSet() {
		out = append(out, platform.CheckResult{Status: platform.StatusFail, Finding: "whatsapp has no verify token: Meta cannot verify the webhook",
			Fix: "set WHATSAPP_VERIFY_TOKEN to a random string and enter the same in the app's WhatsApp → Configuration → Webhook"})
	}
	if env.Listen == "" {
		out = append(out, platform.CheckResult{Status: platform.StatusFail, Finding: "whatsapp needs server.listen for its webhook",
			Fix: "set server.listen (e.g. 127.0.0.1:8787) behind your public HTTPS endpoint"})
	} else {
		out = append(out, platform.CheckResult{Status: platform.StatusOK,
			Finding: "whatsapp webhook: point the app's callback URL at https://<your host>" + WebhookPath + " (proxied to " + env.Listen + ")"})
	}
	return out
}
