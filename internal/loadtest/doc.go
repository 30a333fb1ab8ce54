// Package loadtest owns Switchboard's load harness: it starts the fake
// platforms (Telegram, Discord, Slack) and the fake OpenAI-compatible model in
// the harness process, runs the real switchboard binary as a child process
// against them, drives N chats × M messages through all three platforms and
// measures what an operator cares about: end-to-end messages/s, latency from
// platform message to first platform reply (model latency subtracted), the
// daemon's CPU per message (its threads' run time in nanoseconds, from
// /proc/<pid>/task/*/schedstat) and page faults, RSS (idle with the channels
// connected — anonymous and file-backed apart, and per mapping from
// /proc/<pid>/smaps — and under load, with the binary's resident sections
// from /proc/<pid>/pagemap), boot-to-ready time,
// BoltDB bytes per 1,000 turns. Options.Platforms runs the chats on a subset
// of the platforms (Discord + Slack leaves Telegram's deliberate send pacing
// out, so the daemon's own rate shows; Telegram alone, with AnswerChars,
// TelegramUnpaced and PerfProfile, is the Telegram-only closed loop of issue
// 35, and the report counts its Bot API calls per answer); Options.IdleOnly
// measures the idle daemon alone, and Startup (startup.go) times process
// start → first getUpdates over many starts, with DiskPressure beside it. It also holds the in-process rig of the handler benchmarks
// (inproc.go) and EchoModel, a lean instant model for load runs.
//
// Design decisions:
//   - The daemon is a child process (the real binary) so RSS is the daemon's
//     alone; fakes, drivers and bookkeeping stay in the harness process.
//   - Reply detection is a "tap" inside each fake's HTTP server (a handler
//     wrapper, the fakes' Wrap option): every user message carries a unique
//     token (q<chat>x<seq>z) that the echo model repeats, and the tap
//     timestamps the first successful platform call (send or edit) whose body
//     carries it. This times the platform call, not a poll of the fake's
//     state, and counts duplicates (a token in more than one newly created
//     message) as a side effect. It was a reverse proxy in front of each
//     fake: a second HTTP hop per call, in the process that shares the
//     machine's cores with the daemon.
//   - The harness process is kept cheap so the end-to-end figure measures the
//     daemon: the fakes do their platform's work (Discord's zlib payloads,
//     Slack's envelopes) without per-event allocations that cost more than
//     the work, and cmd/loadtest runs with a higher GOGC (-harness-gogc).
//   - Chats are closed loops (each sends its next message once the previous
//     one was answered), so N chats means N conversations in flight.
//   - Figures are reported, never asserted as wall-clock limits; the tests
//     assert correctness (every message answered exactly once).
package loadtest
