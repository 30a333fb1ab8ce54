package platform

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Problem is one finding of a section's validation.
type Problem struct {
	// Key is relative to the section ("token", "guilds[0]"), or absolute
	// ("server.listen") when Global is set.
	Key    string
	Global bool
	Msg    string
	// Because, when set, makes this a missing required value: config's
	// message names the environment variable to set.
	Because string
}

// Checker collects a section's problems with the wording config uses for
// its own keys.
type Checker struct {
	Problems []Problem
	// RedactURL renders URLs in messages without credentials (config sets it).
	RedactURL func(string) string
}

// Fail records a problem at key (relative to the section).
func (c *Checker) Fail(key, format string, args ...any) {
	c.Problems = append(c.Problems, Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
}

// FailGlobal records a problem at an absolute key ("server.listen").
func (c *Checker) FailGlobal(key, format string, args ...any) {
	c.Problems = append(c.Problems, Problem{Key: key, Global: true, Msg: fmt.Sprintf(format, args...)})
}

// Require records that key must be set (a token an enabled platform needs).
func (c *Checker) Require(key string, set bool, because string) {
	if !set {
		c.Problems = append(c.Problems, Problem{Key: key, Because: because})
	}
}

// OneOf checks an enumeration.
func (c *Checker) OneOf(key, val string, allowed ...string) {
	if !slices.Contains(allowed, val) {
		c.Fail(key, "must be one of %s, got %q", strings.Join(allowed, " | "), Truncate(val, 60))
	}
}

// Positive checks n > 0.
func (c *Checker) Positive(key string, n int) {
	if n <= 0 {
		c.Fail(key, "must be a positive integer, got %d", n)
	}
}

// NonNegative checks n >= 0.
func (c *Checker) NonNegative(key string, n int) {
	if n < 0 {
		c.Fail(key, "must be 0 or more, got %d", n)
	}
}

// NonNegativeDur checks d >= 0.
func (c *Checker) NonNegativeDur(key string, d time.Duration) {
	if d < 0 {
		c.Fail(key, "must not be negative, got %s", FormatDuration(d))
	}
}

// FormatDuration renders d in the shortest Go form: 2m, 4h, 1h30m, 1.5s.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// HTTPURL checks an optional http(s) URL.
func (c *Checker) HTTPURL(key, raw string) {
	if raw == "" {
		return
	}
	if err := c.CheckURL(raw, "http", "https"); err != nil {
		c.Fail(key, "%v", err)
	}
}

// CheckURL accepts an absolute URL with one of schemes.
func (c *Checker) CheckURL(raw string, schemes ...string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || !slices.Contains(schemes, u.Scheme) {
		shown := raw
		if c.RedactURL != nil {
			shown = c.RedactURL(raw)
		}
		return fmt.Errorf("%q must be an absolute %s:// URL", Truncate(shown, 80), strings.Join(schemes, ":// or "))
	}
	return nil
}

// Truncate shortens s to n runes, marking the cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// Rate paces an adapter's sends: messages per second per chat and overall,
// token-bucket style (a burst of that many messages may go at once after a
// quiet spell). A rate of 0 means no limit. The defaults are the platform's
// documented limits; raise them only when the platform allows it (for
// Telegram: paid broadcasts allow up to 1000 messages/s overall).
type Rate struct {
	PerChat      float64 `yaml:"per_chat"`       // messages per second in one chat; 0 = no limit
	PerChatBurst int     `yaml:"per_chat_burst"` // messages that may go at once in one chat
	Global       float64 `yaml:"global"`         // messages per second over all chats; 0 = no limit
	GlobalBurst  int     `yaml:"global_burst"`   // messages that may go at once overall
}

// Bounds of a Rate's fields.
const (
	MaxRatePerSecond = 10000
	MaxRateBurst     = 10000
)

// Rate validates a Rate under key.
func (c *Checker) Rate(key string, r Rate) {
	perSecond := func(k string, x float64) {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || x > MaxRatePerSecond {
			c.Fail(key+"."+k, "must be a number of messages per second from 0 (no limit) to %d, got %v", MaxRatePerSecond, x)
		}
	}
	burst := func(k string, n int) {
		if n < 1 || n > MaxRateBurst {
			c.Fail(key+"."+k, "must be from 1 to %d messages, got %d", MaxRateBurst, n)
		}
	}
	perSecond("per_chat", r.PerChat)
	burst("per_chat_burst", r.PerChatBurst)
	perSecond("global", r.Global)
	burst("global_burst", r.GlobalBurst)
}
