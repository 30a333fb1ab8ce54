// Package agent owns one conversational turn: the ReAct loop (DESIGN.md §3),
// the model Provider over go-openai (streaming, tool-call delta merging,
// usage, idle timeouts, the retry policy), the tool Registry (schema
// validation with santhosh-tekuri/jsonschema, per-call timeouts, safe
// retries, truncation, allowlists, approval), the JSON text tool protocol for
// models without function calling, the ContextBuilder (system prompt, history,
// runtime-context block) and the Agent with its per-session lock.
//
// Design decisions:
//
//   - States. A turn moves through outer states planning → executing →
//     observing (→ compacting when a Compactor is set) → completed | failed;
//     model calls and tool runs have inner states calling, streaming,
//     retrying, tool-executing. Every transition is a TraceEntry with the time
//     spent in the state it left.
//   - Limits (max_iterations, max_tool_calls, token_budget, turn timeout,
//     endlessly repeated calls) end the loop with one closing call without
//     tools, so the user gets an answer. Finish reasons: a step or tool-call
//     limit and repetition → max_iterations; token budget and turn timeout →
//     budget (the timeout's closing call gets Options.FinalGrace).
//   - Identical calls (same tool, same canonical arguments) are answered with
//     an error note from the third one on; a fourth ends the loop.
//   - Tool failures are retried only for Repeatable tools or *TemporaryError,
//     so a tool with side effects never runs twice after an ambiguous failure.
//     Tools must honour ctx: the per-call timeout cancels ctx, it does not
//     abandon a running tool.
//   - Streaming: text deltas go out as they arrive. Text that precedes a tool
//     call, or came from a model attempt that is being retried, is withdrawn
//     with EventReset. In the JSON protocol only the "answer" string of a
//     {"type":"final"} reply is streamed (when "type" precedes "answer"),
//     never the envelope or an action.
//   - Timeouts: Options.Timeout bounds the wait for a model call's first
//     chunk, StreamIdleTimeout every later gap; both failures are retried.
//   - Commit: a finished or canceled turn is committed in one AppendTurn
//     (user message, tool calls, every result, the answer or the partial
//     text). A turn that failed at the model is committed only if tools ran
//     (their effects stay on record), and then without Sources so the inbox
//     does not consider the message answered. A canceled turn is committed
//     without Sources as well: its partial text is no answer, and a message
//     interrupted by shutdown must be replayed at the next start.
//   - The system prompt depends only on persona, offered tools and protocol;
//     time, platform and sender go in a <runtime-context> block in front of the
//     user message, which is not stored in history (the stored user message is
//     the user's text).
//   - Secrets: the API key is redacted from every error the provider returns.
package agent
