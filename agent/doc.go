// Package agent owns one conversational turn: the ReAct loop (DESIGN.md §3),
// the model Provider (go-openai's types; the request JSON and the SSE stream
// written and read by wire.go and sse.go; streaming, tool-call delta merging,
// usage, idle timeouts, the retry policy), the tool Registry (schema
// validation with google/jsonschema-go, per-call timeouts, safe
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
//     budget (the timeout's closing call gets Options.FinalGrace, kept inside
//     TurnTimeout).
//   - Identical calls (same tool, same canonical arguments) are answered with
//     an error note from the third one on; a fourth ends the loop.
//   - Tool failures are retried only for Repeatable tools or *TemporaryError,
//     so a tool with side effects never runs twice after an ambiguous failure;
//     a *PermanentError (a policy refusal) is never retried.
//     Tools must honour ctx: the per-call timeout cancels ctx, it does not
//     abandon a running tool.
//   - Streaming: text deltas go out as they arrive. Text that precedes a tool
//     call, or came from a model attempt that is being retried, is withdrawn
//     with EventReset. In the JSON protocol only the "answer" string of a
//     {"type":"final"} reply is streamed (when "type" precedes "answer"),
//     never the envelope or an action.
//   - Timeouts: Options.Timeout bounds each model call attempt as a whole
//     (first chunk to the end of the stream: a stream trickling a byte now and
//     then is cut at Timeout), StreamIdleTimeout every gap between chunks;
//     these failures are retried. TurnTimeout bounds the whole turn: the
//     work stops FinalGrace (at most a quarter of TurnTimeout) before it, and
//     the closing answer must fit in what is left; if it does not, the turn
//     ends at TurnTimeout with the text streamed so far (or a fixed note).
//   - Answer size: Options.MaxResponseChars (llm.max_response_chars) bounds
//     one model answer, content, reasoning and tool-call arguments together.
//     A model that streams past it is cut there: the provider stops reading
//     (closing the stream drops the connection), logs one WARN line and
//     returns the text so far with "… [answer cut: the model sent more than
//     N characters]", finish reason "length" and no tool calls (a call cut
//     mid-arguments never runs). The turn ends normally with that text, so
//     history never holds, nor re-sends, more than the bound.
//   - Commit: a finished or canceled turn is committed in one AppendTurn
//     (user message, tool calls, every result, the answer or the partial
//     text). A turn that failed at the model is committed only if tools ran
//     (their effects stay on record), and then without Sources so the inbox
//     does not consider the message answered. A canceled turn is committed
//     without Sources as well: its partial text is no answer, and a message
//     interrupted by shutdown must be replayed at the next start.
//   - Reads: a turn reads its history, the session's counters and its notes
//     once, in one transaction when the store is a memory.TurnReader holding
//     the notes too (turnview.go); the compactor and the notes message work
//     from that view, re-reading the notes only when compaction changed them.
//   - Streams: ordinary chunks (text, reasoning, finish, usage) are read by
//     hand (ssefast.go), tool-call deltas and anything unusual by a
//     json.Decoder; both give the same chunks (fuzzed).
//   - The system prompt depends only on persona, offered tools and protocol;
//     time, platform and sender go in a <runtime-context> block in front of the
//     user message, which is not stored in history (the stored user message is
//     the user's text).
//   - Secrets: the API key is redacted from every error the provider returns.
package agent
