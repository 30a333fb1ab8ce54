package config

import "github.com/switchboard-bot/switchboard/channels/platform"

// Rate paces an adapter's sends (platform.Rate; the Telegram section has one).
type Rate = platform.Rate
