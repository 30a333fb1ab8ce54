package agent

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// countingTransport counts the response body bytes the client reads and
// whether it closed a body before its end (which drops the connection).
type countingTransport struct {
	base http.RoundTripper

	mu          sync.Mutex
	read        int64
	closedEarly bool
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{rc: resp.Body, t: c}
	}
	return resp, err
}

func (c *countingTransport) stats() (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.read, c.closedEarly
}

type countingBody struct {
	rc  io.ReadCloser
	t   *countingTransport
	eof bool
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.t.mu.Lock()
	b.t.read += int64(n)
	b.t.mu.Unlock()
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *countingBody) Close() error {
	if !b.eof {
		b.t.mu.Lock()
		b.t.closedEarly = true
		b.t.mu.Unlock()
	}
	return b.rc.Close()
}

// logBuf is a concurrency-safe log sink.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

const (
	testMaxResponse = 5000
	bigAnswer       = 4 << 20 // bytes the misbehaving fake sends
)

// huge is about n bytes of text with multi-byte characters, so a cut by
// bytes instead of characters would show.
func huge(n int) string { return strings.Repeat("héllo wörld ", n/14+1) }

// TestProviderCutsAnswerAtMaxResponseChars: a model that streams megabytes
// gets its answer cut at the bound, marked, with finish reason "length"; the
// client stops reading (the rest of the stream is never received) and logs
// one WARN line. Without the bound the whole 4 MB came back.
func TestProviderCutsAnswerAtMaxResponseChars(t *testing.T) {
	marker := cutMarker(testMaxResponse)
	tests := []struct {
		name        string
		resp        fakellm.Response
		wantContent func(t *testing.T, content string)
		wantReason  int // runes of reasoning kept
	}{
		{"content", fakellm.Response{Content: huge(bigAnswer), ChunkSize: 4096},
			func(t *testing.T, c string) {
				cut, ok := strings.CutSuffix(c, "\n\n"+marker)
				if !ok || utf8.RuneCountInString(cut) != testMaxResponse || !strings.HasPrefix(huge(bigAnswer), cut) {
					t.Errorf("content: %d runes, ends %q", utf8.RuneCountInString(c), tail(c))
				}
			}, 0},
		{"reasoning", fakellm.Response{Reasoning: huge(bigAnswer), ChunkSize: 4096, Content: "never reached"},
			func(t *testing.T, c string) {
				if c != marker {
					t.Errorf("content %q, want only the marker", tail(c))
				}
			}, testMaxResponse},
		{"tool arguments", fakellm.Response{Content: "let me look", ArgChunkSize: 4096,
			ToolCalls: []fakellm.ToolCall{{Name: "lookup", Arguments: `{"q":"` + huge(bigAnswer) + `"}`}}},
			func(t *testing.T, c string) {
				if c != "let me look\n\n"+marker {
					t.Errorf("content %q", tail(c))
				}
			}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakellm.Start(t, fakellm.Queue(tt.resp))
			ct := &countingTransport{base: srv.HTTPClient().Transport}
			logs := &logBuf{}
			p := NewProvider(Options{BaseURL: srv.URL, APIKey: testKey, Model: "fake-model",
				HTTPClient: &http.Client{Transport: ct}, MaxResponseChars: testMaxResponse,
				Logger: slog.New(slog.NewTextHandler(logs, nil))})
			var streamed strings.Builder
			resp, err := p.Chat(context.Background(), ChatRequest{Model: "fake-model",
				Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "go on forever"}}},
				StreamObserver{Text: func(s string) { streamed.WriteString(s) }})
			if err != nil {
				t.Fatal(err)
			}
			tt.wantContent(t, resp.Content)
			if !utf8.ValidString(resp.Content) || !utf8.ValidString(resp.Reasoning) {
				t.Error("the cut split a character")
			}
			if got := utf8.RuneCountInString(resp.Reasoning); got != tt.wantReason {
				t.Errorf("reasoning %d runes, want %d", got, tt.wantReason)
			}
			if !resp.Cut || resp.FinishReason != "length" || resp.ToolCalls != nil {
				t.Errorf("cut=%v finish=%q tool calls=%v", resp.Cut, resp.FinishReason, resp.ToolCalls)
			}
			if !strings.HasPrefix(resp.Content, streamed.String()) || strings.Contains(streamed.String(), "answer cut") {
				t.Errorf("streamed %d bytes that do not lead to the content", streamed.Len())
			}
			read, early := ct.stats()
			if read > 256<<10 || !early {
				t.Errorf("client read %d bytes of a %d-byte answer, closed early %v: it should stop reading at the bound", read, bigAnswer, early)
			}
			if n := strings.Count(logs.String(), "level=WARN msg=\"model answer cut"); n != 1 {
				t.Errorf("%d WARN lines about the cut:\n%s", n, logs.String())
			}
			if !strings.Contains(logs.String(), "max_response_chars=5000") {
				t.Errorf("log does not name the bound: %s", logs.String())
			}
		})
	}
}

// TestProviderUnderMaxResponseCharsUnchanged: an answer at the bound is not
// touched (no marker, tool calls kept).
func TestProviderUnderMaxResponseCharsUnchanged(t *testing.T) {
	answer := strings.Repeat("ü", testMaxResponse-10)
	srv := fakellm.Start(t, fakellm.Queue(
		fakellm.Response{Content: answer, ChunkSize: 700},
		fakellm.Response{Content: "abcde", ToolCalls: []fakellm.ToolCall{{Name: "lookup", Arguments: `{"q":"x"}`}}},
	))
	p := NewProvider(Options{BaseURL: srv.URL, APIKey: testKey, HTTPClient: srv.HTTPClient(), MaxResponseChars: testMaxResponse})
	req := ChatRequest{Model: "fake-model", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"}}}
	resp, err := p.Chat(context.Background(), req, StreamObserver{})
	if err != nil || resp.Content != answer || resp.Cut || resp.FinishReason != "stop" {
		t.Fatalf("%d runes cut=%v finish=%q err=%v", utf8.RuneCountInString(resp.Content), resp.Cut, resp.FinishReason, err)
	}
	resp, err = p.Chat(context.Background(), req, StreamObserver{})
	if err != nil || resp.Content != "abcde" || resp.Cut || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Arguments != `{"q":"x"}` {
		t.Fatalf("%+v %v", resp, err)
	}
}

// TestTurnCutsOverlongAnswer: through ProcessMessage, in both tool protocols,
// the answer the user gets, the streamed text and the stored history are cut
// at the bound with the marker; a tool call cut mid-arguments is not run.
func TestTurnCutsOverlongAnswer(t *testing.T) {
	marker := cutMarker(testMaxResponse)
	bound := testMaxResponse + len("\n\n") + utf8.RuneCountInString(marker)
	tests := []struct {
		name     string
		protocol string
		resp     fakellm.Response
		want     func(text string) bool
	}{
		{"native text", ProtocolNative, fakellm.Response{Content: huge(bigAnswer), ChunkSize: 4096},
			func(s string) bool {
				return strings.HasSuffix(s, "\n\n"+marker) && strings.HasPrefix(huge(bigAnswer), strings.TrimSuffix(s, "\n\n"+marker))
			}},
		{"native tool arguments", ProtocolNative, fakellm.Response{ArgChunkSize: 4096,
			ToolCalls: []fakellm.ToolCall{{Name: "lookup", Arguments: `{"q":"` + huge(bigAnswer) + `"}`}}},
			func(s string) bool { return s == marker }},
		{"json final answer", ProtocolJSON, fakellm.Response{Content: `{"type":"final","answer":"` + huge(bigAnswer) + `"}`, ChunkSize: 4096},
			func(s string) bool {
				return strings.HasSuffix(s, "\n\n"+marker) && strings.HasPrefix(huge(bigAnswer), strings.TrimSuffix(s, "\n\n"+marker))
			}},
		{"json action", ProtocolJSON, fakellm.Response{Content: `{"type":"action","tool":"lookup","args":{"q":"` + huge(bigAnswer) + `"}}`, ChunkSize: 4096},
			func(s string) bool { return s == marker }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := constTool("lookup", "found")
			h := newHarness(t, fakellm.Queue(tt.resp), func(o *Options) {
				o.MaxResponseChars = testMaxResponse
				o.ToolProtocol = tt.protocol
			}, lookup)
			rec := &recorder{}
			res, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "talk", OnEvent: rec.on})
			if err != nil {
				t.Fatal(err)
			}
			if n := utf8.RuneCountInString(res.Text); n > bound || !tt.want(res.Text) {
				t.Fatalf("answer of %d runes (bound %d), ends %q", n, bound, tail(res.Text))
			}
			if res.FinishReason != FinishFinal {
				t.Errorf("finish %q", res.FinishReason)
			}
			if rec.visible() != res.Text {
				t.Errorf("the streamed text (%d bytes, ends %q) is not the answer", len(rec.visible()), tail(rec.visible()))
			}
			if calls := lookup.Calls(); len(calls) != 0 {
				t.Errorf("the cut tool call ran: %d calls", len(calls))
			}
			if n := h.srv.RequestCount(); n != 1 {
				t.Errorf("%d model calls, want 1", n)
			}
			hist, err := h.sessions.LoadHistory(context.Background(), "s", 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(hist) != 2 || hist[1].Content != res.Text || len(hist[1].ToolCalls) != 0 {
				t.Fatalf("history: %d messages", len(hist))
			}
			for _, m := range hist {
				if n := utf8.RuneCountInString(m.Content) + utf8.RuneCountInString(m.Reasoning); n > bound {
					t.Errorf("stored %s message of %d runes (bound %d)", m.Role, n, bound)
				}
			}
		})
	}
}

func tail(s string) string {
	if len(s) <= 80 {
		return s
	}
	return "…" + s[len(s)-80:]
}
