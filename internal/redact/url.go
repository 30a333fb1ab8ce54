// Package redact hides credentials in text that is printed: URLs with a
// password, a token as user info, or secret-looking query parameters. It is
// a leaf package so that every layer (config, daemon, doctor, the platform
// adapters, the agent) prints URLs the same way; internal/config exposes it
// as config.RedactURL. Error hides given secrets in an error's text too, and
// Passwords names every piece of a connection string's password a driver may
// echo (also one split by an unencoded '@').
package redact

import (
	"net/url"
	"strings"
)

// URL is the one way a configured URL is printed (status, `config
// get`, /status, doctor, log lines): the password of the user info and the
// values of query parameters that look like credentials are replaced by
// "[redacted]"; everything else (scheme, host, path, harmless parameters)
// stays readable. A value that does not parse as a URL but contains '@' or
// '?' is redacted whole, since it cannot be taken apart safely. The empty
// string stays empty.
//
// Query parameters count as secret when their name, lower-cased and with '-'
// read as '_', is one of secretParams or ends in one of secretSuffixes
// ("x_api_key", "access_token", "client_secret").
func URL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		if strings.ContainsAny(raw, "@?#") {
			return "[redacted URL]"
		}
		return raw
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "[redacted]")
		} else if u.User.Username() != "" {
			// A lone user part is often a token (https://TOKEN@host).
			u.User = url.User("[redacted]")
		}
	}
	if u.RawQuery != "" {
		u.RawQuery = redactQuery(u.RawQuery)
	}
	if u.Fragment != "" && secretQueryish(u.Fragment) {
		u.Fragment, u.RawFragment = "[redacted]", ""
	}
	return unescapeRedacted(u.String())
}

// secretParams are query parameter names that carry credentials ("ticket":
// Slack's Socket Mode connection URL).
var secretParams = map[string]bool{
	"key": true, "api_key": true, "apikey": true, "token": true, "secret": true, "password": true,
	"passwd": true, "pwd": true, "pass": true, "sig": true, "signature": true, "auth": true,
	"authorization": true, "credential": true, "credentials": true, "code": true, "access_token": true,
	"x_amz_signature": true, "x_amz_credential": true, "x_amz_security_token": true, "ticket": true,
}

// secretSuffixes mark compound names ("bot_token", "client_secret").
var secretSuffixes = []string{"_key", "_token", "_secret", "_password", "_sig", "_signature", "_auth", "_credential"}

func secretParam(name string) bool {
	n := strings.ReplaceAll(strings.ToLower(name), "-", "_")
	if secretParams[n] {
		return true
	}
	for _, s := range secretSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// redactQuery keeps parameter order and names, replacing secret values. It
// works on the raw text so that an unparsable query is still handled.
func redactQuery(raw string) string {
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		name, _, hasValue := strings.Cut(p, "=")
		dec, err := url.QueryUnescape(name)
		if err != nil {
			dec = name
		}
		switch {
		case hasValue && secretParam(dec):
			parts[i] = name + "=[redacted]"
		case !hasValue && len(p) >= 16:
			// A bare long token as the whole parameter ("?abcdef0123456789…").
			parts[i] = "[redacted]"
		}
	}
	return strings.Join(parts, "&")
}

// secretQueryish reports whether a fragment carries key=value credentials
// (OAuth implicit flow: #access_token=…).
func secretQueryish(frag string) bool {
	for _, p := range strings.Split(frag, "&") {
		if name, _, ok := strings.Cut(p, "="); ok && secretParam(name) {
			return true
		}
	}
	return false
}

// unescapeRedacted turns the escaped marker url.URL.String writes back into
// plain "[redacted]".
func unescapeRedacted(s string) string {
	s = strings.ReplaceAll(s, "%5Bredacted%5D", "[redacted]")
	return strings.ReplaceAll(s, "%5bredacted%5d", "[redacted]")
}
