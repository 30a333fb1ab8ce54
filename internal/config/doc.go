// Package config owns Switchboard's operator contract, config.yaml: the Go
// schema (Config and its sections), every key's default, ${ENV} expansion,
// strict decoding with file:line errors, semantic validation, read-only
// rendering for `switchboard config get`, and in-place editing for
// `switchboard config set/unset` (SetInFile/UnsetInFile resolve the key
// against the schema and validate the result; the comment-preserving YAML
// editing itself is package internal/config/yamledit).
//
// Files: types.go (the schema), defaults.go (Default), load.go (Load,
// Parse, ParseLenient, Digest, Error, YAML syntax), yamlhint.go and
// yamlplace.go (where a syntax error starts), salvage.go (what ParseLenient
// keeps of a file that is not valid YAML), display.go (how messages show
// values from the environment), decode.go (node tree → Go
// values), env.go, validate.go, render.go (get / redacted rendering),
// edit.go (set/unset, EditText), preview.go (the console's editing,
// WriteVerified), watch.go.
//
// Design decisions:
//
//   - One source per default. A default of behaviour that a library owns is
//     exported by that library and Default() writes it: agent/defaults (the
//     model client and ReAct loop bounds, which agent.Options also falls back
//     to) and heartbeat/schedule.DefaultGrace (a job's grace). Every other
//     key's default is defined in Default() alone, and the libraries take
//     explicit values from internal/daemon, which maps a Config to their own
//     option types (heartbeat.Config, heartbeat.JobSpec, agent.Options). This
//     package imports no library but those leaf packages, channels (the
//     target-address syntax: channels.CheckTarget) and the platform registry
//     (channels/platform, internal/platforms).
//   - channels.<name> is not a Go field per platform: Channels holds each
//     registered platform's own section (a struct pointer from its package,
//     telegram.ConfigIn(cfg.Channels)), built from its descriptor's defaults
//     and decoded, validated, rendered and edited like the other sections
//     (unknown keys with file:line, ${ENV}, env-backed defaults, secrets
//     redacted). Parse uses the built-in platforms; ParseWith takes another
//     registry, and Config.Platforms says which one a config was built with.
//   - Cron specs and active_hours are validated with heartbeat/schedule, the
//     parsers the scheduler runs, so what validates is what runs.
//   - Decoding walks a yaml.Node tree against the Go types by hand (driven by
//     the `yaml` struct tags) instead of yaml.Decoder.KnownFields, so every
//     error names the file, the line, the dotted key path and, for unknown
//     keys, the closest known key ("did you mean").
//   - YAML syntax errors are placed where they start, not where the parser
//     noticed them (yamlhint.go): a value whose opening quote is not closed on
//     its line is reported at that line and column, a tab in the indentation
//     at its line and column with a hint to use spaces; the parser's own words
//     follow in parentheses, without its line (one message, one line number).
//     The parser's other errors, which the library reports at a 0-based line
//     of the enclosing construct, are placed at the first line at which the
//     file fails that way, an unclosed "[" or "{" at its bracket
//     (yamlplace.go).
//   - A config edited where it does not run (`config set` while the daemon
//     runs) is built with EditText, checked by the daemon in its own
//     environment, and written with WriteVerified; Config.Digest tells
//     whether the daemon runs a given content of the file. ParseLenient
//     reads what it can of an invalid file, only to find the running daemon:
//     with a YAML syntax error, every top-level block (server:, bot:, …)
//     that parses on its own still counts (salvage.go).
//   - Tool names in agent.tools must be built-in tools (BuiltinTools), MCP
//     tools of a configured server (<server>__<tool>, mcp.servers) or valid
//     globs such as github__* (ToolNameProblem; built-ins are enabled by exact
//     name, globs admit MCP tools). Persona
//     names cannot be checked here (the personas directory is not read by
//     this package): internal/daemon.LoadPersonaSet checks them with
//     Config.ErrorAt, so they too carry file:line, at validate, start and reload.
//   - ${VAR} and ${VAR:-default} are expanded per scalar after YAML parsing,
//     so a variable's value can never inject YAML. ":-" takes the default when
//     the variable is unset or empty (as in POSIX shells). "$${" is a literal
//     "${". Only the ${...} form expands; a lone "$" is kept as written.
//     A message about a value that came from a reference shows the reference
//     as written ("${VAR}"), never the value: validation errors, ErrorAt,
//     and Config.Scrub for any other text about the config (display.go).
//   - Every URL-valued key (a key named "url" or ending in "_url": llm.base_url,
//     the channels' api_url, gateway_url and webhook_url) is printed through
//     RedactURL (internal/redact) by `config get`, the rendered YAML and
//     validation errors: a user-info password and query parameters that look
//     like credentials (key, api-key, token, secret, password, sig, …) show as
//     "[redacted]". The daemon's status, doctor and log lines use the same
//     helper.
//   - Keys that hold secrets or endpoints default to the environment variable
//     DESIGN §4 names (llm.api_key ← ${OPENAI_API_KEY}, channels.telegram.token
//     ← ${TELEGRAM_BOT_TOKEN}, …) when the key is absent from the file, so a
//     missing or partial config.yaml behaves exactly like the shipped one.
//     Default() itself is pure: it never reads the environment.
//   - A missing variable is an empty string. Emptiness is an error only where
//     a value is required (an enabled channel's token, the Slack secret its
//     mode needs); the error names the variable to set and never the value.
//   - Durations use Go syntax ("90s", "1h30m") plus a leading whole-days part
//     ("7d", "1d12h"). Durations are rendered back in the shortest Go form
//     ("2m", "168h").
//   - Relative paths (bot.data_dir, personas.dir) are kept as written;
//     Config.ResolvePath resolves them against the directory of the file the
//     config was loaded from, so `--config /etc/switchboard/config.yaml` does
//     not depend on the daemon's working directory.
//   - Jobs: kind defaults to "task", misfire to "skip", grace to 5m (a run
//     that starts later than grace after its scheduled time counts as missed;
//     misfire decides whether a missed run is skipped or run once), timezone
//     "" means bot.timezone.
//   - SetInFile/UnsetInFile edit the file textually where they can (only the
//     edited value's bytes change; comments, blank lines and alignment stay),
//     verify the edited text parses to exactly the intended tree, and
//     otherwise fall back to re-encoding the yaml.Node tree (comments and key
//     order kept, whitespace normalized). Either way the result is validated
//     with Parse before an atomic write (temp file, fsync, rename, original
//     mode). Concurrent editors are not locked against each other: the last
//     rename wins. UnsetInFile also removes a key the schema does not know
//     when it is in the file, so a typo can be fixed from the CLI.
//   - YAML anchors, aliases and merge keys (<<) are honoured when loading;
//     recursion and alias expansion are bounded, so a self-referencing
//     document is an error, never a hang. Edits never go through an anchor.
//   - Values that came from the environment are shown in error messages as
//     the reference written in the file ("${SLACK_BOT_TOKEN}"), never as the
//     variable's value, in case a secret was put under the wrong key.
package config
