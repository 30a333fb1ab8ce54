package agent

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

func TestParseEnvelope(t *testing.T) {
	tests := []struct {
		in      string
		want    Envelope
		wantErr string
	}{
		{`{"type":"final","answer":"hi"}`, Envelope{Type: "final", Answer: "hi"}, ""},
		{"```json\n{\"type\":\"action\",\"tool\":\"t\",\"args\":{\"a\": 1}}\n```", Envelope{Type: "action", Tool: "t", Args: json.RawMessage(`{"a":1}`)}, ""},
		{`Here you go: {"type":"action","tool":"t"} hope it helps`, Envelope{Type: "action", Tool: "t", Args: json.RawMessage(`{}`)}, ""},
		{`{"type":"action","tool":"t","args":"{\"a\":2}"}`, Envelope{Type: "action", Tool: "t", Args: json.RawMessage(`{"a":2}`)}, ""},
		{`{"answer":"implicit final"}`, Envelope{Type: "final", Answer: "implicit final"}, ""},
		{`{"type":"FINAL","answer":""}`, Envelope{Type: "final"}, ""},
		{`plain prose`, Envelope{}, "no JSON object"},
		{`{"type":"final","answer":"unterminated`, Envelope{}, "invalid JSON"},
		{`{"type":"final"}`, Envelope{}, `needs an "answer"`},
		{`{"type":"final","answer":42}`, Envelope{}, `"answer" must be a string`},
		{`{"type":"action","args":{}}`, Envelope{}, `needs a "tool"`},
		{`{"type":"action","tool":"t","args":[1]}`, Envelope{}, `"args" must be a JSON object`},
		{`{"type":"final","answer":"a","answer":"b"}`, Envelope{}, "duplicate key"},
		{`{"tool_name":"x"}`, Envelope{}, `missing "type"`},
		{`{"type":"think"}`, Envelope{}, `unknown "type"`},
	}
	for _, tt := range tests {
		got, err := ParseEnvelope(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: err %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got.Type != tt.want.Type || got.Tool != tt.want.Tool || got.Answer != tt.want.Answer || string(got.Args) != string(tt.want.Args) {
			t.Errorf("%q: got %+v %v", tt.in, got, err)
		}
	}
}

// stream feeds s to a streamer in pieces whose sizes come from sizes.
func stream(s string, sizes []byte) (string, int) {
	var out strings.Builder
	n := 0
	as := &answerStreamer{emit: func(d string) { out.WriteString(d); n++ }}
	i, k := 0, 0
	for i < len(s) {
		step := 1
		if len(sizes) > 0 {
			step = int(sizes[k%len(sizes)]%9) + 1
			k++
		}
		end := min(len(s), i+step)
		as.Feed(s[i:end])
		i = end
	}
	return out.String(), n
}

func TestAnswerStreamer(t *testing.T) {
	tests := []struct {
		in   string
		want string // streamed text
	}{
		{`{"type":"final","answer":"Hello \"world\"\n\u00e9\ud83d\ude80 ok"}`, "Hello \"world\"\né🚀 ok"},
		{"```json\n{\"type\": \"final\", \"answer\": \"fenced\"}\n```", "fenced"},
		{`{"answer":"late type","type":"final"}`, ""},
		{`{"type":"action","tool":"t","args":{"answer":"no"}}`, ""},
		{`{"type":"final","meta":{"x":[1,"}"]},"answer":"after skip"}`, "after skip"},
		{`Sure! {"type":"final","answer":"prose first"}`, ""},
		{`{"type":"final","answer":"Grüße 東京"}`, "Grüße 東京"},
	}
	for _, tt := range tests {
		for _, sizes := range [][]byte{nil, {0}, {3, 7, 1}, {8}} {
			got, _ := stream(tt.in, sizes)
			if got != tt.want {
				t.Errorf("%q sizes %v: streamed %q want %q", tt.in, sizes, got, tt.want)
			}
		}
	}
}

// FuzzParseEnvelope: the parser never panics, nothing is streamed out of an
// action, and what was streamed of a final answer is a prefix of it.
func FuzzParseEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"type":"final","answer":"hi"}`,
		"```json\n{\"type\":\"action\",\"tool\":\"t\",\"args\":{\"a\":1}}\n```",
		`{"type":"action","tool":"t","args":"{\"a\":2}"}`,
		`{"answer":"x","type":"final"}`,
		`{"type":"final","answer":"\ud83d\ude80 \u00e9\\"}`,
		`{"type":"final","answer":"a","answer":"b"}`,
		`{"type":"final","answer":"a","type":"action","tool":"x"}`,
		`{"type":"final","answer":"abc`,
		"{",
		"",
	} {
		f.Add(s, []byte{1, 5})
	}
	f.Fuzz(func(t *testing.T, s string, sizes []byte) {
		env, err := ParseEnvelope(s)
		streamed, _ := stream(s, sizes)
		if err == nil && env.Type == EnvelopeAction && streamed != "" {
			t.Fatalf("streamed %q out of an action reply %q", streamed, s)
		}
		if err == nil && env.Type == EnvelopeFinal {
			if !utf8.ValidString(env.Answer) && utf8.ValidString(s) {
				t.Fatalf("invalid utf-8 answer from valid input")
			}
			// Whatever was streamed is the beginning of the real answer
			// (nothing to take back).
			if reset, _ := reconcile(streamed, env.Answer); reset {
				t.Fatalf("streamed %q is not a prefix of the answer %q (input %q)", streamed, env.Answer, s)
			}
		}
	})
}

// FuzzAnswerStreamer: for any answer and any chunking of a canonical final
// envelope, the streamed text is exactly the answer.
func FuzzAnswerStreamer(f *testing.F) {
	f.Add("Hello \"world\"\n", []byte{1})
	f.Add("🚀 é 東京 \\ / \t", []byte{2, 3})
	f.Add("</tool-output> {\"type\":\"action\"}", []byte{9})
	f.Fuzz(func(t *testing.T, answer string, sizes []byte) {
		b, _ := json.Marshal(map[string]string{"type": "final"})
		a, _ := json.Marshal(answer)
		envelope := string(b[:len(b)-1]) + `,"answer":` + string(a) + "}"
		env, err := ParseEnvelope(envelope)
		if err != nil {
			t.Fatalf("canonical envelope rejected: %v", err)
		}
		got, _ := stream(envelope, sizes)
		if got != env.Answer {
			t.Fatalf("streamed %q want %q", got, env.Answer)
		}
	})
}

func intp(i int) *int { return &i }

func TestToolCallMerger(t *testing.T) {
	tc := func(idx *int, id, name, args string) openai.ToolCall {
		return openai.ToolCall{Index: idx, ID: id, Type: "function", Function: openai.FunctionCall{Name: name, Arguments: args}}
	}
	tests := []struct {
		name   string
		deltas []openai.ToolCall
		want   string
	}{
		{"openai style", []openai.ToolCall{tc(intp(0), "a", "f", ""), tc(intp(0), "", "", `{"x"`), tc(intp(1), "b", "g", ""),
			tc(intp(0), "", "", `:1}`), tc(intp(1), "", "", `{}`)}, `a f {"x":1}|b g {}`},
		{"no index", []openai.ToolCall{tc(nil, "a", "f", `{"k"`), tc(nil, "", "", `:2}`), tc(nil, "b", "g", `{}`)}, `a f {"k":2}|b g {}`},
		{"same index different ids", []openai.ToolCall{tc(intp(0), "a", "f", `{}`), tc(intp(0), "b", "g", `{"y":1}`)}, `a f {}|b g {"y":1}`},
		{"missing id", []openai.ToolCall{tc(intp(2), "", "f", `{}`)}, `call_2 f {}`},
		{"name repeated per chunk", []openai.ToolCall{tc(intp(0), "a", "f", `{`), tc(intp(0), "a", "f", `}`)}, `a f {}`},
	}
	for _, tt := range tests {
		var m toolCallMerger
		for _, d := range tt.deltas {
			m.add(d)
		}
		var parts []string
		for _, c := range m.result() {
			parts = append(parts, c.ID+" "+c.Name+" "+c.Arguments)
		}
		if got := strings.Join(parts, "|"); got != tt.want {
			t.Errorf("%s: got %q want %q", tt.name, got, tt.want)
		}
	}
}

// FuzzToolCallMerger: arguments of several calls, split anywhere and
// interleaved in any order across indexes, come back whole and in index order.
func FuzzToolCallMerger(f *testing.F) {
	f.Add(`{"city":"Berlin"}`, `{"q":"x y"}`, []byte{1, 2, 3})
	f.Add("", "{}", []byte{0})
	f.Add(`{"é":"🚀"}`, `[`, []byte{7, 0, 255})
	f.Fuzz(func(t *testing.T, a, b string, plan []byte) {
		args := []string{a, b}
		rest := []string{a, b}
		var m toolCallMerger
		m.add(openai.ToolCall{Index: intp(0), ID: "id0", Type: "function", Function: openai.FunctionCall{Name: "f0"}})
		m.add(openai.ToolCall{Index: intp(1), ID: "id1", Type: "function", Function: openai.FunctionCall{Name: "f1"}})
		k := 0
		for rest[0] != "" || rest[1] != "" {
			p := byte(1)
			if len(plan) > 0 {
				p = plan[k%len(plan)]
			}
			k++
			i := int(p & 1)
			if rest[i] == "" {
				i = 1 - i
			}
			n := min(len(rest[i]), int(p>>1)%5+1)
			m.add(openai.ToolCall{Index: intp(i), Function: openai.FunctionCall{Arguments: rest[i][:n]}})
			rest[i] = rest[i][n:]
		}
		got := m.result()
		if len(got) != 2 {
			t.Fatalf("got %d calls", len(got))
		}
		for i, c := range got {
			if c.Arguments != args[i] || c.Name != []string{"f0", "f1"}[i] || c.ID != []string{"id0", "id1"}[i] {
				t.Fatalf("call %d: %+v want args %q", i, c, args[i])
			}
		}
	})
}
