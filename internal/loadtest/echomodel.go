package loadtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// EchoModel is a lean OpenAI-compatible streaming endpoint for load runs:
// it answers every chat completion with "echo: " and the last user message
// (the runtime-context block stripped), streamed like fakellm's Echo (a role
// chunk, content in 5-character chunks, a finish chunk, a usage chunk,
// [DONE]), instantly.
//
// fakellm decodes every request in full and marshals every chunk by
// reflection: in the in-process benchmarks it was a fifth of all allocations
// (~180 per turn) and a quarter of the CPU, so it measured itself as much as
// the daemon. EchoModel finds the last user message in the raw body and
// writes the chunks from templates. Use fakellm where a test needs scripted
// answers, errors or delays.
type EchoModel struct {
	srv      *httptest.Server
	requests atomic.Int64
	bufs     sync.Pool
	URL      string // base URL up to /v1, as llm.base_url takes it
}

// NewEchoModel starts the endpoint on loopback; Close stops it.
func NewEchoModel() *EchoModel {
	m := &EchoModel{bufs: sync.Pool{New: func() any { return new(bytes.Buffer) }}}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	m.URL = m.srv.URL + "/v1"
	return m
}

// Close stops the server.
func (m *EchoModel) Close() { m.srv.Close() }

// RequestCount is how many chat completions were answered.
func (m *EchoModel) RequestCount() int { return int(m.requests.Load()) }

// echoCountPath answers RequestCount over HTTP (ModelProcess).
const echoCountPath = "/requests"

func (m *EchoModel) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == echoCountPath {
		_, _ = w.Write(strconv.AppendInt(nil, m.requests.Load(), 10))
		return
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	in := m.bufs.Get().(*bytes.Buffer)
	out := m.bufs.Get().(*bytes.Buffer)
	defer func() {
		in.Reset()
		out.Reset()
		m.bufs.Put(in)
		m.bufs.Put(out)
	}()
	if _, err := in.ReadFrom(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	user, ok := lastUserText(in.Bytes())
	if !ok {
		http.Error(w, `{"error":{"message":"no user message","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	seq := m.requests.Add(1)
	answer := "echo: " + stripRuntimeContext(user)
	writeEchoStream(out, seq, answer, in.Len())
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out.Bytes())
}

// writeEchoStream writes the SSE stream of one answer.
func writeEchoStream(out *bytes.Buffer, seq int64, answer string, requestBytes int) {
	var head []byte
	head = append(head, `{"id":"chatcmpl-echo`...)
	head = strconv.AppendInt(head, seq, 10)
	head = append(head, `","object":"chat.completion.chunk","created":`...)
	head = strconv.AppendInt(head, time.Now().Unix(), 10)
	head = append(head, `,"model":"fake-model","system_fingerprint":"fp_echo","choices":`...)
	chunk := func(choices, usage string) {
		out.WriteString("data: ")
		out.Write(head)
		out.WriteString(choices)
		out.WriteString(`,"usage":`)
		out.WriteString(usage)
		out.WriteString("}\n\n")
	}
	chunk(`[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`, "null")
	for s := answer; s != ""; {
		i, n := 0, 0
		for i < len(s) && n < 5 {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			n++
		}
		part, _ := json.Marshal(s[:i])
		chunk(`[{"index":0,"delta":{"content":`+string(part)+`},"logprobs":null,"finish_reason":null}]`, "null")
		s = s[i:]
	}
	chunk(`[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]`, "null")
	p, c := max(1, requestBytes/4), max(1, len(answer)/4)
	chunk(`[]`, `{"prompt_tokens":`+strconv.Itoa(p)+`,"completion_tokens":`+strconv.Itoa(c)+`,"total_tokens":`+strconv.Itoa(p+c)+`}`)
	out.WriteString("data: [DONE]\n\n")
}

// userMarker starts a user message with plain content in the request body
// (the daemon writes "role" first, as go-openai did).
var userMarker = []byte(`{"role":"user","content":"`)

// lastUserText finds the content of the last user message with plain
// content in a chat-completions request body.
func lastUserText(body []byte) (string, bool) {
	i := bytes.LastIndex(body, userMarker)
	if i < 0 {
		return "", false
	}
	start := i + len(userMarker) - 1 // the opening quote
	end := start + 1
	for end < len(body) {
		switch body[end] {
		case '\\':
			end += 2
			continue
		case '"':
			var s string
			if err := json.Unmarshal(body[start:end+1], &s); err != nil {
				return "", false
			}
			return s, true
		}
		end++
	}
	return "", false
}

// stripRuntimeContext drops a leading <runtime-context>…</runtime-context>
// block, as fakellm.StripRuntimeContext does.
func stripRuntimeContext(s string) string {
	const open, closing = "<runtime-context>", "</runtime-context>"
	if !strings.HasPrefix(strings.TrimLeft(s, " \n"), open) {
		return s
	}
	i := strings.Index(s, closing)
	if i < 0 {
		return s
	}
	return strings.TrimLeft(s[i+len(closing):], "\n")
}
