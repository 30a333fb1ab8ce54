// Package personas owns the persona files as data: one Markdown file per
// persona with YAML front matter (go.yaml.in/yaml/v3) and a body that is the
// persona's identity and voice; parsing and validation; the three built-in
// defaults (assistant, reporter, buddy) embedded with go:embed and written
// out on first run; and the loader that turns a directory into an immutable
// Set. Deciding which persona serves a chat (the Resolver, /persona choices)
// and converting a Persona to the agent's type live in channels/hub.
//
// The shipped defaults are the *.md files in this directory, embedded in the
// binary (defaults.go): read-only built-ins that nothing writes at run time. This
// directory is not a personas.dir: the default one is ./data/personas (next
// to the database, ignored by git), where the defaults are written on first
// run and where the console saves edits, so editing a persona never changes
// this package's files (issue 28).
//
// A persona file looks like this:
//
//	---
//	description: Concise daily reports
//	language: auto
//	model: gpt-4o-mini        # optional; "" = llm.model
//	fallbacks: [gpt-4o, {base_url: "http://127.0.0.1:11434/v1", model: llama3.1}]
//	                          # optional; absent = llm.fallbacks, [] = none; never
//	                          # keys: a base_url gets the key config.yaml gives it
//	temperature: 0.3          # optional; absent = llm.temperature
//	max_tokens: 1200          # optional; 0/absent = llm.max_tokens
//	tools: [current_time]     # optional; absent = agent.tools, [] = no tools
//	skills: [release-notes]   # optional; absent = every skill, [] = none (agent/skills)
//	greeting: Short and friendly; mention one thing from the last chat.
//	---
//	You are the reporter of this workspace. ...
//
// Design decisions:
//
//   - Names. The persona's name is the file's stem: reporter.md is "reporter".
//     A name is 1–64 characters of a-z, 0-9, _ and - (the rule config.yaml
//     uses). The front-matter "name" key is optional; when present it must
//     equal the stem, so two files can never claim one name and renaming a
//     persona means renaming its file. Files that are not *.md, and files whose
//     name starts with "." (editor swap files, our own temporary files), are
//     ignored; subdirectories are not read.
//   - Only regular files inside the directory are read (internal/opfile,
//     the helper skills use too): a file is opened without blocking and
//     checked on the opened descriptor, so a FIFO, socket or device named
//     *.md is refused at once instead of hanging a load or reload; a file
//     over MaxFileSize (256 KiB) is refused unread (never more than
//     MaxFileSize+1 bytes are read). Symlinks are followed only while they
//     stay inside the directory: a persona file linked from a subfolder
//     loads, one that leads outside it (another tree, /dev/zero) is refused.
//     Each refusal is a *ParseError naming the file and the reason, which
//     the daemon logs once per load as a WARN "persona skipped".
//   - Strict parsing. A file must start with a "---" line and close its front
//     matter with another "---" line. Unknown keys, duplicate keys, values of
//     the wrong type, an out-of-range temperature (0–2), a negative max_tokens,
//     a name that does not match, invalid UTF-8 and an empty body are errors
//     of type *ParseError naming file and line (lines count from the top of
//     the file). A malformed file is skipped; the others load. A YAML null
//     (`tools:` with nothing after it) means "absent".
//   - Language is a hint, not a translator: "" or "auto" means "answer in the
//     user's language"; any other value (e.g. "English", "de") adds one line to
//     the identity given to the agent (channels/hub.AgentPersona).
//   - Greeting holds style hints for the heartbeat's proactive messages; the
//     agent does not see it in ordinary turns.
//   - Defaults are written out only on first run: when the directory does not
//     exist or holds no persona file. Each file is written under a temporary
//     name and hard-linked into place, so an existing file is never
//     overwritten, and an operator who deletes a default does not get it back
//     on the next start. Directory 0755, files 0644.
//   - The built-ins always resolve by name: the daemon serves WithBuiltins of
//     the loaded directory, so a directory holding only zebra.md still has
//     assistant, reporter and buddy, and a file named like a built-in
//     overrides it. A configured name that no persona has is a config error
//     (internal/daemon.LoadPersonaSet), never a silent substitute.
//   - Sets are immutable: methods return copies, so a Set can be shared by
//     every turn and swapped whole on a live reload.
//
// Dependencies: personas imports no package of this module but
// internal/opfile (a leaf on the standard library only); channels/hub
// (the Resolver, AgentPersona) and internal/daemon (loading, checks) use it.
package personas
