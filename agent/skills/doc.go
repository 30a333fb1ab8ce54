// Package skills loads Agent Skills (the open SKILL.md format) from a
// directory and offers them to the model through the skill tool.
//
// A skills directory (config skills.dir) holds one folder per skill, each
// with a SKILL.md file: YAML front matter between "---" lines with name and
// description (required; license, compatibility, metadata and allowed-tools
// of the format are accepted and ignored, as are other keys), then the
// instructions in Markdown:
//
//	skills/
//	  release-notes/
//	    SKILL.md      ---
//	                  name: release-notes
//	                  description: Write release notes from a list of changes.
//	                  ---
//	                  # Release notes
//	                  1. Group the changes by ...
//
// Design decisions:
//
//   - Progressive disclosure: the system prompt lists only each skill's name
//     and description (Tool.PromptSection, bounded to MaxListed skills and
//     MaxListChars characters); the skill tool returns a skill's full
//     instructions when the model asks for them, in pages of PageChars
//     characters so a long skill is not cut by the observation limit.
//   - A skill's name must match its folder's name and use a-z, 0-9, "-" and
//     "_" (at most 64). The description is one line of at most 1024
//     characters. At most MaxSkills folders are read. A malformed file is
//     reported with file:line (*ParseError) through the Library's logger and
//     skipped; the others load.
//   - Only regular files inside the directory are read (internal/opfile): a
//     SKILL.md is opened without blocking and checked on the opened file, so
//     a FIFO, socket or device named SKILL.md is refused at once instead of
//     stopping every turn; a file over MaxFileSize (256 KiB) is refused
//     unread (at most MaxFileSize+1 bytes are ever read). Symlinks are
//     followed only while they stay inside skills.dir: a symlinked skill
//     folder or SKILL.md that resolves inside it is a skill like any other;
//     one that leads outside it (another tree, /dev/zero) is refused. Each
//     refusal is a WARN "skill skipped" naming the file and the reason,
//     logged once per (re)load, not on every turn, and listed by Problems.
//   - Hot reload: the Library re-reads the directory when the name, size or
//     modification time of any SKILL.md changed, checked at most once per
//     ReloadInterval (2s) when the skills are used. The prompt only changes
//     when the skills do, so it stays cacheable between edits.
//   - Per-persona allowlist: a persona's front matter key skills lists the
//     skills it may use (absent = every skill, [] = none). The tool is not
//     offered to a persona with no skill (agent.Availability), and refuses a
//     skill the calling persona may not use.
//   - Skills are written by the operator, so the prompt tells the model to
//     follow the instructions the skill tool returns; the tool reads nothing
//     but the SKILL.md files of the configured directory.
package skills
