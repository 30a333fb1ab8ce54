package config

import "math"

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
	maxRatePerSecond = 10000
	maxRateBurst     = 10000
)

// defaultTelegramRate is Telegram's documented limit: about one message per
// second in a chat and 30 per second overall.
func defaultTelegramRate() Rate {
	return Rate{PerChat: 1, PerChatBurst: 1, Global: 30, GlobalBurst: 30}
}

// rate validates a Rate under key.
func (v *validator) rate(key string, r Rate) {
	perSecond := func(k string, x float64) {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || x > maxRatePerSecond {
			v.fail(key+"."+k, "must be a number of messages per second from 0 (no limit) to %d, got %v", maxRatePerSecond, x)
		}
	}
	burst := func(k string, n int) {
		if n < 1 || n > maxRateBurst {
			v.fail(key+"."+k, "must be from 1 to %d messages, got %d", maxRateBurst, n)
		}
	}
	perSecond("per_chat", r.PerChat)
	burst("per_chat_burst", r.PerChatBurst)
	perSecond("global", r.Global)
	burst("global_burst", r.GlobalBurst)
}
