package agent

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// Chunks as servers send them: OpenAI (with its obfuscation padding),
// DeepSeek-style reasoning, fakellm (internal/testkit/fakellm) and the load
// harness's EchoModel (internal/loadtest/echomodel.go).
var (
	openAIChunk = `{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741570283,` +
		`"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_06737a9306",` +
		`"choices":[{"index":0,"delta":{"content":" Hello"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"Xk2v"}`
	openAIFirst = `{"id":"chatcmpl-B9M","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}`
	openAIStop  = `{"id":"chatcmpl-B9M","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`
	openAIUsage = `{"id":"chatcmpl-B9M","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-mini","choices":[],` +
		`"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`
	reasoningChunk = `{"id":"r1","object":"chat.completion.chunk","created":1,"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"content":null,"reasoning_content":"Let me think \u2014 \"why\"?\n"},"logprobs":null,"finish_reason":null}]}`
	fakellmChunk   = `{"id":"chatcmpl-fake3","object":"chat.completion.chunk","created":1700000000,"model":"fake-model","system_fingerprint":"fp_fakellm","choices":[{"index":0,"delta":{"content":"caf\u00e9 😀"},"logprobs":null,"finish_reason":null}],"usage":null}`
	echoChunk      = `{"id":"chatcmpl-echo7","object":"chat.completion.chunk","created":1700000000,"model":"fake-model","system_fingerprint":"fp_echo","choices":[{"index":0,"delta":{"content":"echo:"},"logprobs":null,"finish_reason":null}],"usage":null}`
	toolCallChunk  = `{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]},"finish_reason":null}]}`
	toolStopChunk  = `{"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`
)

// checkChunkSound fails t if decodeChunkFast accepts payload but
// json.Unmarshal fails or decodes something else, into a zero chunk and into
// one that reuses the cleared array of an earlier, bigger one, as Recv does.
func checkChunkSound(t testing.TB, payload []byte) bool {
	t.Helper()
	reused := func() streamChunk {
		stale := make([]streamChoice, 3, 4)
		for i := range stale {
			stale[i] = streamChoice{Index: 7, Delta: streamDelta{Content: "stale", ToolCalls: []openai.ToolCall{{ID: "s"}}}, FinishReason: "stale"}
		}
		clear(stale[:cap(stale)])
		return streamChunk{Choices: stale[:0]}
	}
	var accepted [2]bool
	for i, start := range []func() streamChunk{func() streamChunk { return streamChunk{} }, reused} {
		c := start()
		if accepted[i] = decodeChunkFast(payload, &c); !accepted[i] {
			continue
		}
		ref := start()
		if err := json.Unmarshal(payload, &ref); err != nil {
			t.Fatalf("decodeChunkFast accepted %q, json.Unmarshal: %v", payload, err)
		}
		if !reflect.DeepEqual(c, ref) {
			t.Fatalf("decodeChunkFast(%q) = %#v, json.Unmarshal %#v", payload, c, ref)
		}
	}
	if accepted[0] != accepted[1] {
		t.Fatalf("decodeChunkFast(%q) accepted into a zero chunk: %v, into a reused one: %v", payload, accepted[0], accepted[1])
	}
	return accepted[0]
}

func TestDecodeChunkFast(t *testing.T) {
	tests := []struct {
		payload string
		fast    bool
	}{
		{openAIChunk, true}, {openAIFirst, true}, {openAIStop, true}, {reasoningChunk, true},
		{fakellmChunk, true}, {echoChunk, true}, {toolStopChunk, true},
		{`{}`, true}, {` { } `, false}, // Recv hands payloads trimmed
		{`{"choices":[]}`, true}, {`{"choices":null,"usage":null}`, true},
		{`{"usage":null,"choices":[{"finish_reason":"length","delta":{"reasoning_content":"r","content":"c"},"index":2}]}`, true},
		{`{"CHOICES":[{"Index":1,"Delta":{"Content":"x"}}]}`, true},
		{`{"\u0063hoices":[{"ind\u0065x":1}]}`, true},
		{"{\"choice\u017f\":[{\"index\":1}]}", true}, // ſ folds to s, as encoding/json matches keys
		{`{"choices":[{"index":0,"delta":null,"finish_reason":null},{"index":1,"delta":{"content":"b"}}]}`, true},
		{`{"choices":[{"index":0,"delta":{"content":"\ud83d\ude00 \ud800 \u00e9"}}]}`, true},
		{"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff\"}}]}", true},
		{`{"choices":[{"index":-0,"delta":{"role":"assistant","tool_calls":null}}]}`, true},
		{`{"choices":[{"index":0,"logprobs":{"content":[{"token":"a","bytes":[97],"top_logprobs":[]}]},"delta":{}}]}`, true},

		{openAIUsage, true}, {`{"usage":{}}`, true},
		{`{"usage":{"PROMPT_TOKENS":3,"prompt_tokens_details":null,"completion_tokens_details":{"reasoning_tokens":2,"x":[1]}}}`, true},
		{toolCallChunk, false},
		{`{"usage":{"prompt_tokens":1,"prompt_tokens":2}}`, false}, {`{"usage":{"total_tokens":1.5}}`, false},
		{`{"usage":{"prompt_tokens_details":[]}}`, false},
		{`{"choices":[{"index":0,"delta":{"tool_calls":[]}}]}`, false},
		{`{"choices":[],"choices":[]}`, false}, {`{"choices":[],"Choices":[]}`, false},
		{`{"choices":[{"index":0,"index":1}]}`, false},
		{`{"choices":[null]}`, false}, {`{"choices":{}}`, false}, {`{"choices":"x"}`, false},
		{`{"choices":[{"index":1.0}]}`, false}, {`{"choices":[{"index":1e2}]}`, false},
		{`{"choices":[{"index":"1"}]}`, false}, {`{"choices":[{"index":99999999999999999999}]}`, false},
		{`{"choices":[{"delta":{"content":5}}]}`, false}, {`{"choices":[{"finish_reason":1}]}`, false},
		{`{"choices":[{"delta":[]}]}`, false}, {`{"usage":0}`, false},
		{`{"choices":[]`, false}, {`{"choices":[]}}`, false}, {`{"choices":[],}`, false}, {`{"choices" []}`, false},
		{`{"x":[1,]}`, false}, {`{"x":tru}`, false}, {`{"x":"\q"}`, false}, {"{\"x\":\"\t\"}", false},
		{`{"choices":[]} {}`, false}, {`null`, false}, {`[]`, false}, {`{"error":{"message":"x"}}`, false /* the server's error: left to the decoder, which reports it */}, {`{"error":null,"x_groq":null}`, true},
		{`{"x":` + strings.Repeat("[", 80) + strings.Repeat("]", 80) + `}`, false},
	}
	for _, tt := range tests {
		if got := checkChunkSound(t, []byte(tt.payload)); got != tt.fast {
			t.Errorf("decodeChunkFast(%q) = %v, want %v", tt.payload, got, tt.fast)
		}
	}
}

// recvAll reads a stream as Provider.once does (one chunk value, reused)
// and returns a copy of every chunk, the error that ended it and how many
// chunks took the fast path. slow turns the fast path off.
func recvAll(body string, slow bool) (chunks []streamChunk, fast int, err error) {
	s := newSSEStream(strings.NewReader(body))
	defer s.Close()
	s.slowOnly = slow
	var c streamChunk
	for {
		if err = s.Recv(&c); err != nil {
			return chunks, s.fastChunks, err
		}
		chunks = append(chunks, streamChunk{Choices: slices.Clone(c.Choices), Usage: c.Usage})
	}
}

// checkSameStream fails t unless the stream reads the same with and without
// the fast path, and returns the fast path's chunks.
func checkSameStream(t testing.TB, body string) (chunks []streamChunk, fast int, err error) {
	t.Helper()
	chunks, fast, err = recvAll(body, false)
	want, _, wantErr := recvAll(body, true)
	if !reflect.DeepEqual(chunks, want) {
		t.Fatalf("body %q:\nfast path %#v\ndecoder   %#v", body, chunks, want)
	}
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() || errors.Is(err, io.EOF) != errors.Is(wantErr, io.EOF) {
		t.Fatalf("body %q: fast path ends with %v, decoder with %v", body, err, wantErr)
	}
	return chunks, fast, err
}

func sse(payloads ...string) string {
	var b strings.Builder
	for _, p := range payloads {
		b.WriteString("data: " + p + "\n\n")
	}
	return b.String()
}

func TestSSEFastInterleavings(t *testing.T) {
	split := "data: {\"choices\":[{\"index\":0,\n" + "data: \"delta\":{\"content\":\"split\"}}]}\n\n"
	tests := []struct {
		name         string
		body         string
		chunks, fast int
		wantErr      func(error) bool
	}{
		{"fast, usage, fast, [DONE]", sse(openAIFirst, openAIChunk, openAIUsage, echoChunk, "[DONE]"), 4, 4, nil},
		{"tool calls between text", sse(openAIChunk, toolCallChunk, toolCallChunk, toolStopChunk, openAIStop, "[DONE]"), 5, 3, nil},
		{"value split over data lines", sse(openAIChunk) + split + sse(echoChunk, "[DONE]"), 3, 2, nil},
		{"two values on one line", sse(openAIChunk, echoChunk+" "+fakellmChunk, openAIStop, "[DONE]"), 4, 2, nil},
		{"comments, empty data lines, CRLF", ": ping\n\ndata:\n\nevent: x\r\n" + "data:" + openAIChunk + "\r\n\r\n" + sse("", echoChunk, "[DONE]"), 2, 2, nil},
		{"error line after chunks", sse(openAIChunk, `{"error":{"message":"overloaded","type":"server_error"}}`), 1, 1,
			func(err error) bool {
				var apiErr *openai.APIError
				return errors.As(err, &apiErr) && apiErr.Message == "overloaded"
			}},
		{"bad chunk, then the decoder keeps the stream", sse(openAIChunk, `{"choices":[{"index":0,"delta":{"content":5}}]}`, echoChunk, "[DONE]"), 1, 1,
			func(err error) bool { var te *json.UnmarshalTypeError; return errors.As(err, &te) }},
		{"syntax error", sse(openAIChunk, `{nope}`, echoChunk), 1, 1, func(err error) bool { var se *json.SyntaxError; return errors.As(err, &se) }},
		{"cut inside a chunk", sse(openAIChunk) + "data: {\"choices\":[{\"index\":0\n\n", 1, 1, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		{"ends without [DONE]", sse(openAIChunk, openAIStop), 2, 2, func(err error) bool { return err == io.EOF }},
		{"long chunk", sse(strings.Replace(echoChunk, "echo:", strings.Repeat("é", 5000), 1), "[DONE]"), 1, 1, nil},
		{"too many empty lines", sse(openAIChunk) + strings.Repeat("\n", emptyMessagesLimit+1) + sse(echoChunk), 1, 1,
			func(err error) bool { return errors.Is(err, openai.ErrTooManyEmptyStreamMessages) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks, fast, err := checkSameStream(t, tt.body)
			if tt.wantErr == nil && !errors.Is(err, io.EOF) || tt.wantErr != nil && !tt.wantErr(err) {
				t.Fatalf("ended with %v", err)
			}
			if len(chunks) != tt.chunks || fast != tt.fast {
				t.Errorf("%d chunks, %d by the fast path; want %d, %d", len(chunks), fast, tt.chunks, tt.fast)
			}
		})
	}
}

// TestSSEFastReusesChoices: the fast path reads into the chunk's array, as
// Recv's reuse promises, and allocates only the strings it returns.
func TestSSEFastReusesChoices(t *testing.T) {
	payload := []byte(openAIChunk)
	c := streamChunk{Choices: make([]streamChoice, 0, 1)}
	array := &c.Choices[:1][0]
	allocs := testing.AllocsPerRun(100, func() {
		c = streamChunk{Choices: c.Choices[:0]}
		if !decodeChunkFast(payload, &c) {
			t.Fatal("refused")
		}
	})
	if &c.Choices[0] != array || c.Choices[0].Delta.Content != " Hello" {
		t.Errorf("choices not read into the reused array: %#v", c)
	}
	if allocs > 1 {
		t.Errorf("%v allocations per chunk, want 1 (the content)", allocs)
	}
}

// FuzzDecodeChunkFast is the soundness fuzz: for arbitrary bytes, whenever
// decodeChunkFast accepts, json.Unmarshal agrees.
//
//	go test ./agent/ -run '^$' -fuzz FuzzDecodeChunkFast -fuzztime 20s -parallel 1
func FuzzDecodeChunkFast(f *testing.F) {
	for _, s := range []string{openAIChunk, openAIFirst, openAIStop, openAIUsage, reasoningChunk, fakellmChunk, echoChunk,
		toolCallChunk, toolStopChunk, `{"CHOICES":[{"Index":1,"Delta":{"Content":"x"}}]}`, `{"choices":null}`,
		`{"choices":[{"index":0,"delta":{"content":"\ud83d\ude00 \ud800"}}],"usage":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		checkChunkSound(t, payload)
	})
}

// FuzzSSEFastStream: any body reads the same, chunk for chunk and error for
// error, with and without the fast path.
//
//	go test ./agent/ -run '^$' -fuzz FuzzSSEFastStream -fuzztime 20s -parallel 1
func FuzzSSEFastStream(f *testing.F) {
	f.Add(sse(openAIFirst, openAIChunk, openAIUsage, echoChunk, "[DONE]"))
	f.Add(sse(openAIChunk) + "data: {\"choices\":[{\"index\":0,\n" + "data: \"delta\":{}}]}\n\n")
	f.Add(sse(reasoningChunk, toolCallChunk, `{"error":{"message":"x"}}`))
	f.Add(sse(fakellmChunk+" "+echoChunk, "1", `"s"`, "{}", "[DONE]"))
	f.Add(": c\n\ndata:\n\n" + sse(openAIStop) + "{\"error\": {\"message\": \"m\"}}\n")
	f.Fuzz(func(t *testing.T, body string) {
		checkSameStream(t, body)
	})
}

// BenchmarkSSEStream reads a 200-chunk answer (EchoModel's chunks, five
// characters each) with its finish and usage chunks, as Provider.once does.
//
//	go test ./agent/ -run '^$' -bench SSEStream -benchmem
func BenchmarkSSEStream(b *testing.B) {
	payloads := []string{openAIFirst}
	for range 200 {
		payloads = append(payloads, echoChunk)
	}
	body := sse(append(payloads, openAIStop, openAIUsage, "[DONE]")...)
	for _, bm := range []struct {
		name string
		slow bool
	}{{"fast", false}, {"decoder", true}} {
		b.Run(bm.name, func(b *testing.B) {
			r := strings.NewReader(body)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(body)
				s := newSSEStream(r)
				s.slowOnly = bm.slow
				var c streamChunk
				var err error
				for err == nil {
					err = s.Recv(&c)
				}
				s.Close()
				if err != io.EOF {
					b.Fatal(err)
				}
			}
		})
	}
}

// A stream of ordinary chunks ends without a json.Decoder ever being made,
// [DONE] included (it was made only to report the end: ~2 KB a turn).
func TestSSEOrdinaryStreamMakesNoDecoder(t *testing.T) {
	for _, body := range []string{
		sse(openAIFirst, openAIChunk, openAIStop, openAIUsage, "[DONE]"),
		sse(openAIChunk, openAIStop), // no [DONE]
	} {
		s := newSSEStream(strings.NewReader(body))
		var c streamChunk
		var err error
		for err == nil {
			err = s.Recv(&c)
		}
		if !errors.Is(err, io.EOF) {
			t.Errorf("stream ended with %v, want io.EOF", err)
		}
		if s.dec != nil {
			t.Errorf("body %q: a json.Decoder was made for an ordinary stream", body)
		}
		s.Close()
	}
}
