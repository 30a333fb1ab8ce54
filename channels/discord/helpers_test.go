package discord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
)

const (
	testToken = "test-token-SECRET-5f9c"
	// wait bounds every wait for something the test caused: a hang
	// detector, not a performance bound (milliseconds on a quiet machine,
	// seconds on a loaded one).
	wait = time.Minute
)

// recSink records what the adapter hands to the handler.
type recSink struct {
	mu     sync.Mutex
	msgs   []channels.Message
	calls  int
	failOn map[int]error // call number (1-based) → error
	signal chan struct{}
}

func newSink() *recSink { return &recSink{signal: make(chan struct{}, 1), failOn: map[int]error{}} }

func (s *recSink) Handle(_ context.Context, m channels.Message) error {
	s.mu.Lock()
	s.calls++
	err := s.failOn[s.calls]
	if err == nil {
		s.msgs = append(s.msgs, m)
	}
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
	return err
}

func (s *recSink) got() []channels.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]channels.Message(nil), s.msgs...)
}

// wait waits until at least n messages were accepted.
func (s *recSink) wait(t *testing.T, n int) []channels.Message {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		if got := s.got(); len(got) >= n {
			return got
		}
		select {
		case <-s.signal:
		case <-deadline.C:
			t.Fatalf("sink: timed out waiting for %d messages; got %d: %+v", n, len(s.got()), s.got())
		}
	}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type harness struct {
	fake *fakediscord.Server
	ch   *Adapter
	sink *recSink
	logs *syncBuffer
	done chan error
	stop context.CancelFunc
}

func testOptions(fake *fakediscord.Server, logs *syncBuffer) Options {
	return Options{
		Token:            testToken,
		APIURL:           fake.URL(),
		Logger:           slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		TypingInterval:   40 * time.Millisecond,
		RequestTimeout:   5 * time.Second,
		OpenTimeout:      5 * time.Second,
		WatchdogTimeout:  30 * time.Second,
		WatchdogInterval: 20 * time.Millisecond,
		ReconnectMin:     20 * time.Millisecond,
		ReconnectMax:     100 * time.Millisecond,
		CatchUpRetry:     100 * time.Millisecond,
	}
}

// newChannel builds an adapter against fake without running it.
func newChannel(t *testing.T, fake *fakediscord.Server, mod func(*Options)) (*Adapter, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	opts := testOptions(fake, logs)
	if mod != nil {
		mod(&opts)
	}
	ch, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return ch, logs
}

// start runs the adapter against a fresh fake and waits until it is ready.
func start(t *testing.T, fopts fakediscord.Options, mod func(*Options)) *harness {
	t.Helper()
	h := startNoWait(t, fopts, mod)
	waitReady(t, h)
	return h
}

// startNoWait starts the fake (prep runs before the adapter connects) and
// Run in the background.
func startNoWait(t *testing.T, fopts fakediscord.Options, mod func(*Options), prep ...func(*fakediscord.Server)) *harness {
	t.Helper()
	if fopts.Token == "" {
		fopts.Token = testToken
	}
	if fopts.HeartbeatInterval == 0 {
		fopts.HeartbeatInterval = 500 * time.Millisecond
	}
	fake := fakediscord.Start(t, fopts)
	for _, p := range prep {
		p(fake)
	}
	ch, logs := newChannel(t, fake, mod)
	h := &harness{fake: fake, ch: ch, sink: newSink(), logs: logs, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	go func() { h.done <- ch.Run(ctx, h.sink) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-h.done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Logf("Run returned: %v", err)
			}
		case <-time.After(wait):
			t.Errorf("Run did not return after cancel")
		}
		if bytes.Contains([]byte(logs.String()), []byte(testToken)) {
			t.Errorf("the bot token appeared in the logs:\n%s", logs.String())
		}
	})
	return h
}

func waitReady(t *testing.T, h *harness) {
	t.Helper()
	h.fake.WaitFor(t, wait, "adapter Ready()", h.ch.Ready)
}

// runErr waits for Run to return and gives its error.
func (h *harness) runErr(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.done:
		h.done <- err // keep it for cleanup
		return err
	case <-time.After(wait):
		t.Fatalf("Run did not return")
		return nil
	}
}

func ids(ms []channels.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.MessageID
	}
	return out
}

func fmtMsgs(ms []channels.Message) string {
	var b bytes.Buffer
	for _, m := range ms {
		fmt.Fprintf(&b, "  %s %q chat=%s thread=%s\n", m.MessageID, m.Text, m.ChatID, m.ThreadID)
	}
	return b.String()
}

const (
	guildID = "200000000000000001"
	chanID  = "300000000000000001"
	userID  = "400000000000000001"
	dmID    = "500000000000000001"
)
