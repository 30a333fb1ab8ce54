// Package platforms links the built-in chat platforms: Builtin is the one
// list of them (channels/platform explains why a list and not init()).
// Adding a platform is one line here; everything else — config.yaml's
// channels.<name> section, validation, `config get/set`, the daemon's
// construction, webhook routes, cluster leases, formatting hints, doctor —
// comes from the platform's own Descriptor.
package platforms

import (
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/discord"
	"github.com/switchboard-bot/switchboard/channels/platform"
	"github.com/switchboard-bot/switchboard/channels/slack"
	"github.com/switchboard-bot/switchboard/channels/telegram"
	"github.com/switchboard-bot/switchboard/channels/web"
)

// Builtin is the registry of the platforms compiled in, in config.yaml's
// order (and the daemon's start order).
var Builtin = platform.MustRegistry(
	console.Platform,
	telegram.Platform,
	discord.Platform,
	slack.Platform,
	web.Platform,
)
