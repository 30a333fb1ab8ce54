package console

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/channeltest"
	"github.com/switchboard-bot/switchboard/internal/testkit"
)

// The adapter conformance suite (channels/channeltest), run against the
// terminal: lines typed into its input, answers read from its output.
func TestConformance(t *testing.T) {
	channeltest.Run(t, conformance{})
}

type conformance struct{}

func (conformance) Capabilities() channeltest.Capabilities {
	const inProcess = "the console is a terminal in the daemon's process: no platform API, no connection"
	return channeltest.Capabilities{
		MaxChunk:   100000, // Terminal.Format
		CodeBlocks: channeltest.Fenced,
		NotApplicable: map[channeltest.Behaviour]string{
			channeltest.Redelivery:     "a line typed into the terminal is read once; nothing delivers it again",
			channeltest.Typing:         "a terminal shows the answer as it is written (DeltaWriter) instead of a typing indicator",
			channeltest.GroupMention:   "the console is the operator's one-to-one chat; there are no groups",
			channeltest.OwnMessages:    "the bot's output never comes back as input",
			channeltest.Attachment:     "a terminal line carries text only",
			channeltest.RateLimit:      inProcess,
			channeltest.LostConnection: inProcess,
		},
	}
}

func (conformance) New(t *testing.T) (channels.Channel, channeltest.Driver) {
	in, typed := io.Pipe()
	t.Cleanup(func() { _ = typed.Close() })
	out := &screenLog{}
	return New(Options{In: in, Out: out, User: "operator"}), consoleDriver{typed: typed, out: out}
}

// consoleDriver types lines into the terminal and reads its screen.
type consoleDriver struct {
	typed *io.PipeWriter
	out   *screenLog
}

func (d consoleDriver) DirectTarget() channels.Target {
	return channels.Target{Channel: Name, ChatID: ChatID}
}

// UserSays types a line; it returns once the terminal has read it.
func (d consoleDriver) UserSays(t testing.TB, _ channels.Target, text string) channeltest.Event {
	if _, err := fmt.Fprintln(d.typed, text); err != nil {
		t.Fatalf("typing into the console: %v", err)
	}
	return nil
}

func (d consoleDriver) Sent(channels.Target) []string { return d.out.messages() }

func (d consoleDriver) WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testkit.WaitUntil(t, channeltest.Timeout, 5*time.Millisecond, "console: "+what, func() (bool, <-chan struct{}) {
		return cond(), nil
	})
}

// screenLog records what the terminal writes: a message is everything
// written up to the end of a line written at once (a streamed answer is
// its deltas and the newline that ends it).
type screenLog struct {
	mu   sync.Mutex
	line strings.Builder
	msgs []string
}

func (s *screenLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.line.Write(p)
	if strings.HasSuffix(string(p), "\n") {
		s.msgs = append(s.msgs, strings.TrimSuffix(s.line.String(), "\n"))
		s.line.Reset()
	}
	return len(p), nil
}

func (s *screenLog) messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.msgs...)
}
