// Package platform is the registry of chat platforms: each adapter package
// (channels/telegram, channels/discord, …) describes itself once in a
// Descriptor — its name, its config section (type, defaults, validation,
// which fields are secrets and which default to an environment variable),
// its constructor, its formatting hint, and its capabilities (webhook
// routes, leases for replicas, the direct-chat rule, doctor checks) — and
// everything that lists platforms (internal/config's decoding, validation,
// `config get/set`; internal/daemon's construction, HTTP routes, cluster
// leases, formatting hints; internal/doctor) iterates a Registry instead of
// switching on a platform's name.
//
// Design decisions:
//
//   - No init() registration. A Registry is an immutable value built
//     explicitly from a list of descriptors (NewRegistry); the built-ins are
//     listed in one place, internal/platforms (one line each, like the
//     database/sql driver imports, but without global mutable state), and a
//     test builds its own registry with a dummy platform beside them.
//   - The package imports only channels and internal/redact (and the
//     standard library), so an adapter can describe itself without importing
//     config, doctor or the daemon. Secret and Rate live here for the same
//     reason (internal/config aliases them), and so do Check, CheckResult and
//     the helpers a platform's doctor checks share with internal/doctor
//     (doctor.go: DescribeNetErr, ShownURL, OneLine, Findings).
//   - A platform's message limit is not a descriptor field: the adapter's
//     Format splits answers under it (channels.Channel.Format), the one
//     place that needs it; nothing outside the adapter reads it.
//   - A config section is a pointer to a struct with `yaml` tags (string,
//     bool, int, float, time.Duration, Secret, Rate, slices, maps, nested
//     structs), decoded by internal/config exactly like its own sections:
//     unknown keys are errors with file:line, ${ENV} expands per scalar,
//     Secret fields print "[redacted]", defaults are what Descriptor.Section
//     returns. Validation returns Problems whose keys are relative to the
//     section; config turns them into file:line errors.
package platform
