// Package outbound is delivery: how an answer, a greeting or a job's result
// reaches a chat, the same way for every platform.
//
// It owns
//
//   - formatting and the cap (answercap.go): the text is converted and split
//     by the channel (channels.Channel.Format: the platform's markup, under its
//     message limit, code fences intact) and bounded to Options.MaxChunks
//     messages, a cut answer ending with TruncatedNote;
//   - sending with retries by error class (outbound.go, on internal/retry):
//     rate limits wait at least the platform's retry_after (at most
//     Options.MaxWait), temporary errors back off (BaseDelay doubling to
//     MaxDelay, ±20% jitter), permanent and ambiguous ones are not retried; a
//     failure after the retries is logged at WARN and kept as
//     Stats.LastFailure;
//   - the outbox records (deliveryrun.go, receipts.go): an intent before each
//     platform call and the platform's receipt after, folded into one
//     transaction per call with a memory.Lifecycle store; a chunk whose send
//     has no receipt (a crash during the call) is looked up where the
//     platform can tell (channels.Verifier), else sent again and counted as a
//     resend with a WARN line — the one window DESIGN.md §2 allows a
//     duplicate in; a receipt a full disk refused is kept in memory so the
//     chunk is not taken for a lost send;
//   - streaming (stream.go) and drafts (drafts.go): a Streamer grows the
//     answer as a draft message edited in place, or as an ephemeral preview
//     (channels.Previewer); the final delivery edits the drafts into the
//     answer, adopts the drafts a killed run left, and turns drafts the answer
//     no longer needs into SupersededDraft;
//   - Router (router.go): delivery to a target address by channel name, for
//     what answers no chat message (heartbeat, jobs, send_message, alerts).
//
// It imports the contract (package channels), the storage record types and
// interfaces (package memory: the outbox records, memory.Lifecycle for the
// folded writes, memory.IsStorageError) and internal leaves (internal/retry),
// nothing else of the project: not the agent, not channels/hub, no storage
// driver. The hub (intake, the queue, turns, commands) uses it for chat
// answers, the daemon hands a Router to the heartbeat and jobs;
// imports_test.go keeps the boundary.
package outbound
