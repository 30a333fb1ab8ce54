package console

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
)

// lockedBuf is one stream both the answers and the logs reach (2>&1, or a tty).
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Issue 14 item 4: log lines never tear the console's lines.
func TestScreenKeepsLogsOutOfAnswerLines(t *testing.T) {
	target := channels.Target{Channel: Name, ChatID: ChatID}
	const logLine = "time=x level=INFO msg=\"turn finished\"\n"
	for _, tt := range []struct {
		name   string
		tty    bool
		prompt bool
		steps  func(term *Terminal, log func())
		want   string
	}{
		{"log during a streamed answer waits for its end", false, false, func(term *Terminal, log func()) {
			term.WriteDelta(target, "Hello, ")
			log()
			term.WriteDelta(target, "world")
			log()
			_, _ = term.Send(context.Background(), channels.Outgoing{Target: target, Text: "Hello, world"})
		}, "Hello, world\n" + logLine + logLine},
		{"log between answers goes straight out", false, false, func(term *Terminal, log func()) {
			_, _ = term.Send(context.Background(), channels.Outgoing{Target: target, Text: "one"})
			log()
			_, _ = term.Send(context.Background(), channels.Outgoing{Target: target, Text: "two"})
		}, "one\n" + logLine + "two\n"},
		{"on a terminal the prompt is erased and redrawn around a log line", true, true, func(term *Terminal, log func()) {
			term.showPrompt()
			log()
		}, "> \r\x1b[K" + logLine + "> "},
		{"without a terminal the prompt line is ended first", false, true, func(term *Terminal, log func()) {
			term.showPrompt()
			log()
		}, "> \n" + logLine + "> "},
		{"a streamed answer after the prompt keeps logs back", true, true, func(term *Terminal, log func()) {
			term.showPrompt()
			term.WriteDelta(target, "Hi")
			log()
			_, _ = term.Send(context.Background(), channels.Outgoing{Target: target, Text: "Hi"})
		}, "> Hi\n" + logLine + "> "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := &lockedBuf{}
			screen := NewScreen(out, tt.tty)
			logs := screen.Logs(out)
			term := New(Options{In: strings.NewReader(""), Screen: screen, Prompt: tt.prompt, User: "op"})
			tt.steps(term, func() { _, _ = logs.Write([]byte(logLine)) })
			if got := out.String(); got != tt.want {
				t.Fatalf("screen shows\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// The log lines held during a long answer are bounded; the drop is reported.
func TestScreenHoldIsBounded(t *testing.T) {
	out := &lockedBuf{}
	screen := NewScreen(out, false)
	logs := screen.Logs(out)
	_, _ = screen.Write([]byte("streaming"))
	line := strings.Repeat("x", 1023) + "\n"
	n := maxHeldLogs/len(line) + 10
	for range n {
		_, _ = logs.Write([]byte(line))
	}
	if strings.Contains(out.String(), "x") {
		t.Fatal("a log line was written inside the answer line")
	}
	_, _ = screen.Write([]byte("\n"))
	got := out.String()
	if !strings.HasPrefix(got, "streaming\n") || !strings.Contains(got, "(10 log lines dropped while an answer was printed)") {
		t.Fatalf("unexpected screen (%d bytes), tail %q", len(got), got[max(0, len(got)-80):])
	}
}

// A remote chat attached to a console chat gets what the console would
// print there; the local screen shows nothing of it.
func TestTerminalAttach(t *testing.T) {
	out := &lockedBuf{}
	term := New(Options{In: strings.NewReader(""), Out: out, User: "op"})
	l := &recorder{}
	detach := term.Attach("remote1", l)
	target := channels.Target{Channel: Name, ChatID: "remote1"}
	term.WriteDelta(target, "He")
	term.ResetDelta(target)
	term.WriteDelta(target, "Hello")
	_, _ = term.Send(context.Background(), channels.Outgoing{Target: target, Text: "Hello"})
	detach()
	_, _ = term.Send(context.Background(), channels.Outgoing{Target: target, Text: "after detach"})
	if got, want := strings.Join(l.events, "|"), "delta:He|reset|delta:Hello|text:Hello"; got != want {
		t.Fatalf("listener got %q, want %q", got, want)
	}
	if got := out.String(); got != "after detach\n" {
		t.Fatalf("local screen shows %q", got)
	}
}

type recorder struct{ events []string }

func (r *recorder) Delta(s string) { r.events = append(r.events, fmt.Sprint("delta:", s)) }
func (r *recorder) Reset()         { r.events = append(r.events, "reset") }
func (r *recorder) Text(s string)  { r.events = append(r.events, "text:"+s) }
