package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"sync"

	openai "github.com/sashabaranov/go-openai"

	"github.com/switchboard-bot/switchboard/internal/jsonlite"
)

// The request body of a streamed chat completion, written by hand.
//
// go-openai marshalled the whole request by reflection on every call, each
// message and tool through its own MarshalJSON, whose output encoding/json
// then validates and compacts again: the system prompt, up to agent.max_history
// messages and every tool's JSON Schema were re-encoded (and re-validated) on
// every model call, ~80 allocations and a tenth of the daemon's CPU per
// message in the load profile. This writer appends the same JSON (same
// fields, same omitempty rules, same string escaping as encoding/json) into
// one buffer with no other per-message allocation, and keeps the encodings
// of the parts that do not change between calls: each tool definition (its
// schema compacted once) and the last system prompts.

// encodeCache keeps encodings of the immutable parts of requests. It is
// owned by one Provider and safe for concurrent use.
type encodeCache struct {
	mu     sync.Mutex
	tools  map[string]toolEncoding // by tool name
	system map[string][]byte       // system prompt text → its encoded JSON string
}

// toolEncoding is one tool definition's JSON and what it was made from.
type toolEncoding struct {
	desc   string
	strict bool
	schema []byte // the RawMessage it was made from (compared on lookup)
	json   []byte
}

// Bounds of the caches: when one fills up it starts over, so a daemon whose
// tools or prompts keep changing (MCP reloads, edited personas) cannot grow
// them without limit.
const (
	maxCachedTools   = 512
	maxCachedSystems = 64
	minCachedSystem  = 256 // shorter system texts are encoded each time
)

// appendRequest appends the JSON body of a streamed call for req. temp is
// the temperature to send (requestTemperature): sent whenever it is set,
// 0 included — go-openai's omitempty dropped an explicit 0, so servers
// applied their own default (1.0, 0.8) to an operator who asked for
// deterministic answers; nil sends none (the server's default).
func (c *encodeCache) appendRequest(b []byte, creq *openai.ChatCompletionRequest, temp *float32) ([]byte, error) {
	b = append(b, `{"model":`...)
	b = jsonlite.AppendString(b, creq.Model)
	b = append(b, `,"messages":[`...)
	for i := range creq.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = c.appendMessage(b, &creq.Messages[i]); err != nil {
			return nil, err
		}
	}
	b = append(b, ']')
	//lint:ignore SA1019 OpenAI-compatible servers (Ollama, vLLM, llama.cpp) read only max_tokens (see completionRequest).
	if mt := creq.MaxTokens; mt != 0 {
		b = append(b, `,"max_tokens":`...)
		b = strconv.AppendInt(b, int64(mt), 10)
	}
	if creq.MaxCompletionTokens != 0 {
		b = append(b, `,"max_completion_tokens":`...)
		b = strconv.AppendInt(b, int64(creq.MaxCompletionTokens), 10)
	}
	if temp != nil {
		b = append(b, `,"temperature":`...)
		var err error
		if b, err = appendFloat32(b, *temp); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"stream":true`...)
	if len(creq.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i := range creq.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = c.appendTool(b, &creq.Tools[i]); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if creq.StreamOptions != nil {
		b = append(b, `,"stream_options":{"include_usage":`...)
		b = strconv.AppendBool(b, creq.StreamOptions.IncludeUsage)
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// appendMessage appends one message as go-openai's MarshalJSON writes it.
// Messages with parts (images), a refusal or a legacy function call are rare
// and go through that MarshalJSON.
func (c *encodeCache) appendMessage(b []byte, m *openai.ChatCompletionMessage) ([]byte, error) {
	if m.MultiContent != nil || m.Refusal != "" || m.FunctionCall != nil {
		raw, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		return append(b, raw...), nil
	}
	b = append(b, `{"role":`...)
	b = jsonlite.AppendString(b, m.Role)
	if m.Content != "" {
		b = append(b, `,"content":`...)
		if m.Role == openai.ChatMessageRoleSystem {
			b = c.appendSystem(b, m.Content)
		} else {
			b = jsonlite.AppendString(b, m.Content)
		}
	}
	if m.Name != "" {
		b = append(b, `,"name":`...)
		b = jsonlite.AppendString(b, m.Name)
	}
	if m.ReasoningContent != "" {
		b = append(b, `,"reasoning_content":`...)
		b = jsonlite.AppendString(b, m.ReasoningContent)
	}
	b = jsonlite.AppendArray(b, `,"tool_calls":`, m.ToolCalls, appendToolCall)
	if m.ToolCallID != "" {
		b = append(b, `,"tool_call_id":`...)
		b = jsonlite.AppendString(b, m.ToolCallID)
	}
	return append(b, '}'), nil
}

func appendToolCall(b []byte, tc *openai.ToolCall) []byte {
	b = append(b, '{')
	if tc.Index != nil {
		b = append(b, `"index":`...)
		b = strconv.AppendInt(b, int64(*tc.Index), 10)
		b = append(b, ',')
	}
	if tc.ID != "" {
		b = append(b, `"id":`...)
		b = jsonlite.AppendString(b, tc.ID)
		b = append(b, ',')
	}
	b = append(b, `"type":`...)
	b = jsonlite.AppendString(b, string(tc.Type))
	b = append(b, `,"function":{`...)
	comma := false
	if tc.Function.Name != "" {
		b = append(b, `"name":`...)
		b = jsonlite.AppendString(b, tc.Function.Name)
		comma = true
	}
	if tc.Function.Arguments != "" {
		if comma {
			b = append(b, ',')
		}
		b = append(b, `"arguments":`...)
		b = jsonlite.AppendString(b, tc.Function.Arguments)
	}
	return append(b, "}}"...)
}

// appendSystem appends a system prompt's encoding, from the cache when the
// same text was encoded before (system prompts are byte-identical across the
// turns of a persona, by design: see Runtime).
func (c *encodeCache) appendSystem(b []byte, s string) []byte {
	if len(s) < minCachedSystem {
		return jsonlite.AppendString(b, s)
	}
	c.mu.Lock()
	enc, ok := c.system[s]
	c.mu.Unlock()
	if ok {
		return append(b, enc...)
	}
	enc = jsonlite.AppendString(make([]byte, 0, len(s)+len(s)/16+2), s)
	c.mu.Lock()
	if c.system == nil || len(c.system) >= maxCachedSystems {
		c.system = make(map[string][]byte)
	}
	c.system[s] = enc
	c.mu.Unlock()
	return append(b, enc...)
}

// appendTool appends one tool definition, from the cache when the same
// definition was encoded before. Only function tools with a RawMessage
// schema (what the registry builds) are cached; anything else is encoded by
// go-openai's MarshalJSON.
func (c *encodeCache) appendTool(b []byte, t *openai.Tool) ([]byte, error) {
	var schema json.RawMessage
	if t.Function != nil {
		schema, _ = t.Function.Parameters.(json.RawMessage)
	}
	if t.Type != openai.ToolTypeFunction || t.Function == nil || len(t.Parameters) > 0 || schema == nil {
		raw, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		return append(b, raw...), nil
	}
	f := t.Function
	c.mu.Lock()
	e, ok := c.tools[f.Name]
	c.mu.Unlock()
	if ok && e.desc == f.Description && e.strict == f.Strict && bytes.Equal(e.schema, schema) {
		return append(b, e.json...), nil
	}
	enc, err := encodeTool(f, schema)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.tools == nil || len(c.tools) >= maxCachedTools {
		c.tools = make(map[string]toolEncoding)
	}
	c.tools[f.Name] = toolEncoding{desc: f.Description, strict: f.Strict, schema: bytes.Clone(schema), json: enc}
	c.mu.Unlock()
	return append(b, enc...), nil
}

// encodeTool writes {"type":"function","function":{…}} with the schema
// compacted (as encoding/json does with a RawMessage).
func encodeTool(f *openai.FunctionDefinition, schema json.RawMessage) ([]byte, error) {
	var out bytes.Buffer
	out.WriteString(`{"type":"function","function":{"name":`)
	out.Write(jsonlite.AppendString(nil, f.Name))
	if f.Description != "" {
		out.WriteString(`,"description":`)
		out.Write(jsonlite.AppendString(nil, f.Description))
	}
	if f.Strict {
		out.WriteString(`,"strict":true`)
	}
	out.WriteString(`,"parameters":`)
	if err := json.Compact(&out, schema); err != nil {
		return nil, fmt.Errorf("tool %s: parameters: %w", f.Name, err)
	}
	out.WriteString("}}")
	return out.Bytes(), nil
}

// appendFloat32 writes f as encoding/json does.
func appendFloat32(b []byte, f float32) ([]byte, error) {
	abs := math.Abs(float64(f))
	if math.IsNaN(abs) || math.IsInf(abs, 0) || (abs != 0 && (abs < 1e-6 || abs >= 1e21)) {
		raw, err := json.Marshal(f) // the exponent form, or the error for NaN/Inf
		if err != nil {
			return nil, err
		}
		return append(b, raw...), nil
	}
	return strconv.AppendFloat(b, float64(f), 'f', -1, 32), nil
}
