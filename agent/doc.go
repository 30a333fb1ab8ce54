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
//   - Failover (failover.go): the primary endpoint (Options.BaseURL/APIKey,
//     the persona's or Options.Model) is followed by Options.Fallbacks, or a
//     persona's own Fallbacks. A call that fails transiently after the
//     provider's retries (ModelError.Transient: refused connection, timeout,
//     cut stream, 5xx, 429) moves to the next endpoint; a permanent error is
//     returned as is, so the chat is told (a bad key is never hidden behind
//     another model). Once a fallback answered, the rest of the turn stays
//     on it; the next turn starts from the primary, but an endpoint that
//     failed is skipped for Options.FailoverCooldown (30 s) while another is
//     left. One WARN when failing over, one INFO when the primary answers
//     again; text streamed by the failed attempt is withdrawn
//     (StreamObserver.Discard). ChatResponse.Model/Endpoint, Result.Models
//     and memory.Turn.Models say which model answered; Agent.Endpoints is
//     each endpoint's state for /status; Options.OnModelCall feeds metrics.
//     Endpoint names are "primary", "fallback N", "<persona> fallback N" —
//     never URLs. A persona fallback without a key gets the key of the
//     configured endpoint with the same base URL (persona files hold none).
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
//   - Model servers (README "Model servers"; compat_test.go runs the loop
//     against fakes of each): an error sent inside a 200 stream (a
//     `data: {"error":…}` event, an ordinary chunk with "error", vLLM's
//     {"object":"error"}, Ollama's bare error JSON) is a *StreamError,
//     classified by the status its code names or by its code and type;
//     (*ModelError).Transient tells retry-or-fail-over failures (network,
//     timeout, cut stream, 5xx, 429, server errors in the stream) from
//     permanent ones (400/401/403/404, model_not_found, a bad key, context
//     length), which reach the chat with the server's message (FriendlyError;
//     never for a key error). SSE comment lines are keep-alives: skipped.
//     A temperature that is set is sent, 0 included. In the JSON protocol a
//     model still answering in plain text after the repair round has
//     answered with that text.
//   - Azure OpenAI: llm.base_url is the deployment URL with its query,
//     https://NAME.openai.azure.com/openai/deployments/DEP?api-version=2024-10-21;
//     when the base URL's path holds /openai/deployments/ the key is sent in
//     the api-key header instead of Authorization: Bearer, and the query
//     (kept apart from the path) goes with every call.
package agent
