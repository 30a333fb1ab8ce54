// Package defaults is the one source of the defaults of the model client
// and the ReAct loop (llm.* and agent.* in config.yaml). agent.Options
// fills its zero values from here and internal/config's Default() writes
// the same constants, so the two can never disagree. It imports nothing, so
// the configuration package reads it without compiling the agent.
//
// Keys that only the configuration defines (llm.temperature,
// llm.max_tokens, agent.turn_timeout, …: the agent's zero value means "the
// server's default" or "none" for them) have their default in
// internal/config alone.
package defaults

import "time"

// Model client (llm.*).
const (
	Model        = "gpt-4o-mini"
	Timeout      = 120 * time.Second // one model call attempt
	MaxRetries   = 3                 // model call retries
	ToolProtocol = "auto"            // native, falling back to json
	// MaxResponseChars bounds one model answer (content, reasoning and
	// tool-call arguments together); longer answers are cut.
	MaxResponseChars = 200000
)

// ReAct loop (agent.*).
const (
	MaxIterations     = 25
	MaxToolCalls      = 25
	ToolRetries       = 3
	ToolRetryDelay    = time.Second
	ToolTimeout       = 30 * time.Second
	ObservationMaxLen = 4000
	MaxHistory        = 40
)
