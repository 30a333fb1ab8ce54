package config

import (
	"strings"

	"github.com/switchboard-bot/switchboard/internal/redact"
)

// RedactURL is how a configured URL is printed anywhere (status, `config
// get`, /status, doctor, log lines): the user-info password and the values
// of query parameters that look like credentials become "[redacted]"; see
// redact.URL.
func RedactURL(raw string) string { return redact.URL(raw) }

// IsURLKey reports whether a config key (its last part: "base_url",
// "api_url", "url") holds a URL, so printing it goes through RedactURL.
func IsURLKey(key string) bool {
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		key = key[i+1:]
	}
	return key == "url" || strings.HasSuffix(key, "_url")
}
