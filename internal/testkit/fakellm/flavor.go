package fakellm

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Flavor is the dialect of an OpenAI-compatible server: how it streams text
// and tool calls, reports usage and reports errors, before and inside the
// stream. Each flavor below follows its server's documentation and source
// (named in its comment); where servers changed over releases, the comment
// says which behaviour is reproduced. A cut stream (the connection closed
// without [DONE]: Response.CutAfter) and the pacing options work the same
// in every flavor.
type Flavor string

const (
	// OpenAI is api.openai.com (platform.openai.com/docs/api-reference/chat-streaming):
	// a role chunk, content deltas, tool calls with id/type/name in their
	// first delta and arguments in fragments tagged with the call's index,
	// a finish chunk, usage in a last chunk with empty choices only with
	// stream_options.include_usage; errors {"error":{message,type,param,code}}
	// before the stream and `data: {"error":{…}}` inside it.
	OpenAI Flavor = "openai"
	// Ollama is Ollama's /v1 compatibility layer (ollama/ollama
	// openai/openai.go ToChunk, NewError; middleware/openai.go ChatWriter):
	// every delta carries role "assistant"; reasoning comes as
	// delta.reasoning (not reasoning_content); a tool call comes whole (id,
	// index, name and all arguments) in one delta; usage only with
	// include_usage; errors {"error":{"message","type":"not_found_error"|
	// "invalid_request_error"|"api_error","param":null,"code":null}}, and an
	// error after the stream began is that JSON written bare (no "data:").
	Ollama Flavor = "ollama"
	// LlamaCpp is llama.cpp's llama-server (tools/server: server.cpp,
	// utils.hpp format_oaicompat_chat_stream / format_error_response): keys
	// in alphabetical order, tool-call arguments as partial-parse diffs
	// (id and name first), usage and "timings" in the finish chunk always;
	// errors {"error":{"code":<status>,"message","type"}} with types such as
	// "not_found_error", "exceed_context_size_error", "server_error", the
	// same object as `data: {"error":…}` inside the stream.
	LlamaCpp Flavor = "llama.cpp"
	// VLLM is vLLM's OpenAI server as of its ErrorResponse model
	// {"object":"error","message","type","param","code":<status>} (vllm
	// entrypoints/openai/protocol.py, serving_engine.create_error_response
	// and create_streaming_error_response): that object unwrapped as the
	// body of an error status, and as `data: {"object":"error",…}` followed
	// by `data: [DONE]` inside the stream; reasoning as reasoning_content;
	// tool calls split like OpenAI's; usage only with include_usage.
	VLLM Flavor = "vllm"
	// LiteLLM is the LiteLLM proxy (BerriAI/litellm
	// proxy/common_request_processing.py create_response,
	// _parse_event_data_for_error; proxy_server async_data_generator): errors
	// {"error":{"message","type","param","code":"<status as a string>"}}
	// (Python's json.dumps, so ", " and ": " separators; "None" strings);
	// an error in the first chunk becomes an error status, a later one a
	// `data: {"error": {…}}` event ending the stream.
	LiteLLM Flavor = "litellm"
	// OpenRouter is openrouter.ai (docs: api-reference/streaming, errors):
	// ": OPENROUTER PROCESSING" comment lines, a "provider" field, usage in
	// a last chunk always; errors {"error":{"code":<status>,"message"}}
	// with the status; a mid-generation error is an ordinary chunk with
	// "error":{"code","message"} and choices[0].finish_reason "error".
	OpenRouter Flavor = "openrouter"
	// Azure is Azure OpenAI (learn.microsoft.com azure/ai-services/openai
	// reference, content-filter docs): POST /openai/deployments/<dep>/chat/completions
	// ?api-version=…, the key in an api-key header (401 with
	// {"error":{"code":"401","message":"Access denied due to invalid
	// subscription key or wrong API endpoint…"}} otherwise); a first chunk
	// with empty choices and prompt_filter_results; content_filter_results
	// in choices; errors with string codes ("DeploymentNotFound",
	// "content_filter" with innererror ResponsibleAIPolicyViolation, "429"
	// with Retry-After).
	Azure Flavor = "azure"
	// Groq is api.groq.com (console.groq.com/docs: text-chat streaming,
	// tool-use, errors): x_groq {"id"} in the first chunk and x_groq.usage
	// in the finish chunk (no usage chunk); a tool call whole in one delta;
	// errors {"error":{"message","type","code":"model_not_found"…}}.
	Groq Flavor = "groq"
	// DeepSeek is api.deepseek.com (api-docs.deepseek.com: reasoning_model,
	// error codes, "keep-alive" comments while a request waits):
	// reasoning_content deltas before the content, ": keep-alive" comment
	// lines, usage only with include_usage; errors
	// {"error":{"message","type","param":null,"code"}} (402 "Insufficient
	// Balance").
	DeepSeek Flavor = "deepseek"
)

// Flavors lists every flavor.
func Flavors() []Flavor {
	return []Flavor{OpenAI, Ollama, LlamaCpp, VLLM, LiteLLM, OpenRouter, Azure, Groq, DeepSeek}
}

// Azure's deployment path and the values Server.URL carries for it.
const (
	azurePath       = "/openai/deployments/{deployment}/chat/completions"
	AzureDeployment = "sb-deploy"
	AzureAPIVersion = "2024-10-21"
)

// checkRequest refuses a request without the flavor's credentials (when a
// key is required) or, for Azure, without its api-version.
func (s *Server) checkRequest(hr *http.Request, key string) (Response, bool) {
	if s.flavor == Azure {
		if hr.URL.Query().Get("api-version") == "" {
			return Response{Status: http.StatusNotFound, ErrorCode: "404", ErrorMessage: "Resource not found"}, false
		}
		if key != "" && hr.Header.Get("api-key") != key {
			return Response{Status: http.StatusUnauthorized, ErrorCode: "401",
				ErrorMessage: "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}, false
		}
		return Response{}, true
	}
	if key != "" && hr.Header.Get("Authorization") != "Bearer "+key {
		return Response{Status: http.StatusUnauthorized, ErrorCode: "invalid_api_key", ErrorType: "invalid_request_error",
			ErrorMessage: "Incorrect API key provided."}, false
	}
	return Response{}, true
}

// writeFlavorError answers r's error status in flavor f's shape.
func writeFlavorError(w http.ResponseWriter, f Flavor, r Response) {
	msg := r.ErrorMessage
	if msg == "" {
		msg = http.StatusText(r.Status)
	}
	var body []byte
	switch f {
	case Ollama:
		typ := "api_error"
		switch r.Status {
		case http.StatusBadRequest:
			typ = "invalid_request_error"
		case http.StatusNotFound:
			typ = "not_found_error"
		}
		body, _ = json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
	case LlamaCpp:
		body, _ = json.Marshal(map[string]any{"error": map[string]any{"code": r.Status, "message": msg, "type": orDefault(r.ErrorType, llamaType(r.Status))}})
	case VLLM:
		body = []byte(vllmError(msg, orDefault(r.ErrorType, "BadRequestError"), r.ErrorParam, r.Status))
	case LiteLLM:
		body = []byte(pyJSON(map[string]string{"message": "litellm." + msg, "type": orDefault(r.ErrorType, "None"),
			"param": orDefault(r.ErrorParam, "None"), "code": strconv.Itoa(r.Status)}))
	case OpenRouter:
		body, _ = json.Marshal(map[string]any{"error": map[string]any{"code": r.Status, "message": msg}})
	case Azure:
		e := map[string]any{"code": orDefault(r.ErrorCode, strconv.Itoa(r.Status)), "message": msg}
		if r.ErrorCode == "content_filter" {
			e["param"], e["type"], e["status"] = "prompt", nil, r.Status
			e["innererror"] = map[string]any{"code": "ResponsibleAIPolicyViolation", "content_filter_result": map[string]any{
				"hate": map[string]any{"filtered": true, "severity": "high"}}}
		}
		body, _ = json.Marshal(map[string]any{"error": e})
	default: // Groq, DeepSeek: OpenAI's shape
		writeOpenAIError(w, r)
		return
	}
	if r.RetryAfter != "" {
		w.Header().Set("Retry-After", r.RetryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.Status)
	_, _ = w.Write(body)
}

// vllmError is vLLM's ErrorResponse as pydantic writes it (fields in the
// model's order).
func vllmError(msg, typ, param string, code int) string {
	m, _ := json.Marshal(msg)
	t, _ := json.Marshal(typ)
	p := []byte("null")
	if param != "" {
		p, _ = json.Marshal(param)
	}
	return `{"object":"error","message":` + string(m) + `,"type":` + string(t) + `,"param":` + string(p) + `,"code":` + strconv.Itoa(code) + `}`
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func llamaType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusServiceUnavailable:
		return "unavailable_error"
	}
	return "server_error"
}

// pyJSON writes {"error": {…}} as Python's json.dumps does (", " and ": ").
func pyJSON(fields map[string]string) string {
	var b strings.Builder
	b.WriteString(`{"error": {`)
	for i, k := range []string{"message", "type", "param", "code"} {
		if i > 0 {
			b.WriteString(", ")
		}
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(fields[k])
		b.Write(kb)
		b.WriteString(": ")
		b.Write(vb)
	}
	b.WriteString("}}")
	return b.String()
}

// dialect is how one flavor shapes its chunks.
type dialect struct {
	roleEveryDelta bool   // Ollama
	reasoningKey   string // "reasoning_content" or "reasoning"
	wholeToolCalls bool   // the calls complete in one delta
	usage          string // "include" (a last chunk, with include_usage), "always" (that chunk always), "finish" (in the finish chunk, always), "xgroq"
	comment        string // an SSE comment line sent first
	extra          map[string]any
	azureFilters   bool
}

func dialectOf(f Flavor) dialect {
	d := dialect{reasoningKey: "reasoning_content", usage: "include"}
	switch f {
	case Ollama:
		d.roleEveryDelta, d.reasoningKey, d.wholeToolCalls = true, "reasoning", true
		d.extra = map[string]any{"system_fingerprint": "fp_ollama"}
	case LlamaCpp:
		d.usage = "finish"
		d.extra = map[string]any{"system_fingerprint": "b6000-fake"}
	case OpenRouter:
		d.usage, d.comment = "always", ": OPENROUTER PROCESSING"
		d.extra = map[string]any{"provider": "FakeProvider"}
	case Azure:
		d.azureFilters = true
	case Groq:
		d.usage, d.wholeToolCalls = "xgroq", true
	case DeepSeek:
		d.comment = ": keep-alive"
	}
	return d
}

// flavorEvents are the events of a streamed answer in flavor f and whether
// "data: [DONE]" follows them.
func flavorEvents(f Flavor, req *Request, resp Response, model string, withUsage bool) ([][]byte, bool) {
	d := dialectOf(f)
	id := completionID(req)
	var events [][]byte
	if d.comment != "" {
		events = append(events, []byte(d.comment+"\n\n"))
	}
	chunkOf := func(choices []any) map[string]any {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": req.Time.Unix(), "model": model, "choices": choices}
		for k, v := range d.extra {
			c[k] = v
		}
		return c
	}
	choice := func(delta map[string]any, finish any) map[string]any {
		if d.roleEveryDelta {
			delta["role"] = "assistant"
		}
		ch := map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}
		if d.azureFilters {
			ch["content_filter_results"] = map[string]any{"hate": map[string]any{"filtered": false, "severity": "safe"}}
		}
		return ch
	}
	add := func(c map[string]any) { events = append(events, dataEvent(c)) }
	if d.azureFilters {
		add(map[string]any{"id": "", "object": "", "created": 0, "model": "", "choices": []any{},
			"prompt_filter_results": []any{map[string]any{"prompt_index": 0, "content_filter_results": map[string]any{}}}})
	}
	first := chunkOf([]any{choice(map[string]any{"role": "assistant", "content": ""}, nil)})
	if d.usage == "xgroq" {
		first["x_groq"] = map[string]any{"id": "req_fake" + strconv.Itoa(req.Seq)}
	}
	add(first)
	for _, part := range splitRunes(resp.Reasoning, resp.ChunkSize, 5) {
		add(chunkOf([]any{choice(map[string]any{d.reasoningKey: part}, nil)}))
	}
	for _, part := range resp.contentChunks() {
		add(chunkOf([]any{choice(map[string]any{"content": part}, nil)}))
	}
	if d.wholeToolCalls && len(resp.ToolCalls) > 0 {
		var calls []any
		for i, tc := range resp.ToolCalls {
			calls = append(calls, map[string]any{"index": i, "id": toolCallID(req, i, tc), "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}})
		}
		add(chunkOf([]any{choice(map[string]any{"tool_calls": calls}, nil)}))
	} else {
		for i, tc := range resp.ToolCalls {
			add(chunkOf([]any{choice(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": toolCallID(req, i, tc),
				"type": "function", "function": map[string]any{"name": tc.Name, "arguments": ""}}}}, nil)}))
			for _, frag := range splitRunes(tc.Arguments, resp.ArgChunkSize, 7) {
				add(chunkOf([]any{choice(map[string]any{"tool_calls": []any{map[string]any{"index": i,
					"function": map[string]any{"arguments": frag}}}}, nil)}))
			}
		}
	}
	u := resp.usage(req)
	if !resp.NoFinish {
		fin := chunkOf([]any{choice(map[string]any{}, resp.finish())})
		switch d.usage {
		case "finish":
			fin["usage"] = u
			fin["timings"] = map[string]any{"prompt_n": u.PromptTokens, "predicted_n": u.CompletionTokens}
		case "xgroq":
			fin["x_groq"] = map[string]any{"id": "req_fake" + strconv.Itoa(req.Seq), "usage": map[string]any{
				"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": u.TotalTokens,
				"queue_time": 0.01, "total_time": 0.02}}
		}
		add(fin)
	}
	if d.usage == "always" || (d.usage == "include" && withUsage) {
		c := chunkOf([]any{})
		c["usage"] = u
		add(c)
	}
	done := !resp.NoDone
	if resp.StreamError != nil {
		events, done = insertStreamError(events, resp, f, req, model)
	}
	return events, done
}

// insertStreamError cuts events after the role chunk and StreamErrorAfter
// more, puts flavor f's in-stream error there and says whether [DONE]
// follows it.
func insertStreamError(events [][]byte, resp Response, f Flavor, req *Request, model string) ([][]byte, bool) {
	e := resp.StreamError
	msg := orDefault(e.Message, "the model failed while answering")
	keep := 1 + resp.StreamErrorAfter
	for i, ev := range events { // the role chunk is the first data event
		if strings.HasPrefix(string(ev), "data: ") {
			keep += i
			break
		}
	}
	if f == Azure {
		keep++ // after the prompt_filter_results chunk
	}
	events = append([][]byte(nil), events[:min(keep, len(events))]...)
	code := func() any { // the code as the flavor writes it
		if e.Code != "" {
			return e.Code
		}
		if e.Status != 0 {
			return e.Status
		}
		return nil
	}
	switch f {
	case Ollama: // the error JSON written bare into the event stream; the status was 200, so the type is api_error
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "api_error", "param": nil, "code": nil}})
		return append(events, append(b, '\n')), false
	case LlamaCpp:
		return append(events, dataEvent(map[string]any{"error": map[string]any{"code": e.Status, "message": msg,
			"type": orDefault(e.Type, llamaType(e.Status))}})), false
	case VLLM: // pydantic keeps the model's field order: object first
		return append(events, []byte("data: "+vllmError(msg, orDefault(e.Type, "BadRequestError"), "", e.Status)+"\n\n")), true
	case LiteLLM:
		st := e.Status
		if st == 0 {
			st = http.StatusInternalServerError
		}
		return append(events, []byte("data: "+pyJSON(map[string]string{"message": msg, "type": orDefault(e.Type, "None"),
			"param": "None", "code": strconv.Itoa(st)})+"\n\n")), false
	case OpenRouter:
		c := map[string]any{"id": completionID(req), "object": "chat.completion.chunk", "created": req.Time.Unix(), "model": model,
			"provider": "FakeProvider", "error": map[string]any{"code": code(), "message": msg},
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": ""}, "finish_reason": "error"}}}
		if e.Status != 0 {
			c["error"].(map[string]any)["code"] = e.Status
		}
		return append(events, dataEvent(c)), true
	}
	return append(events, dataEvent(map[string]any{"error": map[string]any{"message": msg, "type": orDefault(e.Type, "server_error"),
		"param": nil, "code": code()}})), false
}

// Temperature is the temperature the request sent, and whether it sent one
// (Body cannot tell an explicit 0 from none).
func (r *Request) Temperature() (float64, bool) {
	var probe struct {
		Temperature *float64 `json:"temperature"`
	}
	if json.Unmarshal(r.Raw, &probe) != nil || probe.Temperature == nil {
		return 0, false
	}
	return *probe.Temperature, true
}
