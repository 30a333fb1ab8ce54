// Package platforms links the built-in chat platforms: Builtin is the one
// list of them (channels/platform explains why a list and not init()).
// Everything else — config.yaml's channels.<name> section, validation,
// `config get/set`, target addresses and user ids (jobs, personas, access),
// the daemon's construction, webhook routes, cluster leases, formatting
// hints, the admin direct-chat rule, doctor's checks and webhook findings
// and the credentials it scrubs — comes from the platform's own Descriptor;
// no package outside the platform's switches on its name.
//
// Measured (issue 29): adding a platform touches one file outside its own
// package — this one, two lines (the import and the list entry) — plus the
// docs: config.yaml's commented channels.<name> section, which
// internal/config's tests require for every key. A throwaway channels/echo
// added this way (descriptor, adapter, DirectChat) built, and config,
// doctor and the CLI's config/doctor tests passed with `git status` showing
// channels/echo/, internal/platforms/builtin.go and config.yaml only;
// internal/daemon's registry_test.go shows the same platform, in a test,
// reaching config, jobs (echo:c1), the daemon, its webhook route, the
// model's hint and doctor with its one line, Builtin.With.
package platforms

import (
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/discord"
	"github.com/switchboard-bot/switchboard/channels/email"
	"github.com/switchboard-bot/switchboard/channels/matrix"
	"github.com/switchboard-bot/switchboard/channels/platform"
	"github.com/switchboard-bot/switchboard/channels/slack"
	"github.com/switchboard-bot/switchboard/channels/telegram"
	"github.com/switchboard-bot/switchboard/channels/web"
	"github.com/switchboard-bot/switchboard/channels/whatsapp"
)

// Builtin is the registry of the platforms compiled in, in config.yaml's
// order (and the daemon's start order).
var Builtin = platform.MustRegistry(
	console.Platform,
	telegram.Platform,
	discord.Platform,
	slack.Platform,
	matrix.Platform,
	email.Platform,
	whatsapp.Platform,
	web.Platform,
)
