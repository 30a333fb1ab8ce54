package console

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/markup"
)

// TB is the part of testing.TB the wait helpers use (the package does not
// import testing, so the daemon binary does not link it).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Sent is one message the bot delivered to a Memory channel, with its text
// after any edits.
type Sent struct {
	ID      string
	Target  channels.Target
	Text    string
	ReplyTo string
	Edits   int
}

// Memory is an in-memory channel for tests: Say pushes a user message through
// the handler like an adapter does, and the channel records what the bot sent,
// edited and whether typing was on. It implements Editor and Typer so the
// streaming and typing paths are exercised.
type Memory struct {
	name     string
	limit    int
	interval time.Duration

	mu       sync.Mutex
	cond     *sync.Cond
	sink     channels.Sink
	sent     []Sent
	byID     map[string]int
	typing   map[string]int // target → active typing indicators
	typings  int            // typing indicators ever started
	failures []error        // next Send calls fail with these, in order
	seq      int
	epoch    string  // makes generated message ids unique across restarts
	files    fileLog // files sent (files.go)
}

var (
	_ channels.Channel = (*Memory)(nil)
	_ channels.Editor  = (*Memory)(nil)
	_ channels.Typer   = (*Memory)(nil)
)

// NewMemory returns a Memory channel named name ("memory" if empty) that
// splits answers at limit runes (0 = 4000) and allows an edit every interval.
func NewMemory(name string, limit int, interval time.Duration) *Memory {
	if name == "" {
		name = "memory"
	}
	if limit <= 0 {
		limit = 4000
	}
	m := &Memory{name: name, limit: limit, interval: interval, byID: map[string]int{}, typing: map[string]int{},
		epoch: strconv.FormatInt(time.Now().UnixNano(), 36)}
	m.cond = sync.NewCond(&m.mu)
	return m
}

// Name implements channels.Channel.
func (m *Memory) Name() string { return m.name }

// Run records the sink and waits for ctx.
func (m *Memory) Run(ctx context.Context, sink channels.Sink) error {
	m.Attach(sink)
	<-ctx.Done()
	return nil
}

// Attach sets the sink without running (tests that don't supervise).
func (m *Memory) Attach(sink channels.Sink) {
	m.mu.Lock()
	m.sink = sink
	m.mu.Unlock()
}

// Say delivers a user message to the handler, as an adapter would, and
// returns Handle's error (nil = persisted, acknowledged).
func (m *Memory) Say(ctx context.Context, msg channels.Message) error {
	m.mu.Lock()
	sink := m.sink
	if msg.Channel == "" {
		msg.Channel = m.name
	}
	if msg.MessageID == "" {
		m.seq++
		msg.MessageID = m.epoch + "-u" + strconv.Itoa(m.seq)
	}
	m.mu.Unlock()
	if msg.Time.IsZero() {
		msg.Time = time.Now()
	}
	if sink == nil {
		return fmt.Errorf("memory channel %s: no sink attached", m.name)
	}
	return sink.Handle(ctx, msg)
}

// FailNext makes the next Send calls fail with errs, one each.
func (m *Memory) FailNext(errs ...error) {
	m.mu.Lock()
	m.failures = append(m.failures, errs...)
	m.mu.Unlock()
}

// Send implements channels.Channel.
func (m *Memory) Send(_ context.Context, out channels.Outgoing) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.failures) > 0 {
		err := m.failures[0]
		m.failures = m.failures[1:]
		return "", err
	}
	m.seq++
	id := "m" + strconv.Itoa(m.seq)
	m.byID[id] = len(m.sent)
	m.sent = append(m.sent, Sent{ID: id, Target: out.Target, Text: out.Text, ReplyTo: out.ReplyTo})
	m.cond.Broadcast()
	return id, nil
}

// Edit implements channels.Editor.
func (m *Memory) Edit(_ context.Context, _ channels.Target, id, text string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, ok := m.byID[id]
	if !ok {
		return channels.Permanent(fmt.Errorf("message %s not found", id))
	}
	m.sent[i].Text = text
	m.sent[i].Edits++
	m.cond.Broadcast()
	return nil
}

// EditInterval implements channels.Editor.
func (m *Memory) EditInterval() time.Duration { return m.interval }

// StartTyping implements channels.Typer.
func (m *Memory) StartTyping(_ context.Context, target channels.Target) func() {
	m.mu.Lock()
	m.typing[target.String()]++
	m.typings++
	m.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			m.typing[target.String()]--
			m.cond.Broadcast()
			m.mu.Unlock()
		})
	}
}

// Typing reports how many typing indicators are active in target.
func (m *Memory) Typing(target string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.typing[target]
}

// TypingStarted reports how many typing indicators were ever started.
func (m *Memory) TypingStarted() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.typings
}

// Format splits Markdown at the channel's limit.
func (m *Memory) Format(md string) []channels.Chunk {
	var out []channels.Chunk
	for _, s := range markup.Split(md, m.limit) {
		out = append(out, channels.Chunk{Text: s, Plain: s})
	}
	return out
}

// Sent returns what was delivered to target ("" = everywhere), in order.
func (m *Memory) Sent(target string) []Sent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sentLocked(target)
}

func (m *Memory) sentLocked(target string) []Sent {
	var out []Sent
	for _, s := range m.sent {
		if target == "" || s.Target.String() == target {
			out = append(out, s)
		}
	}
	return out
}

// WaitFor waits until cond holds for the messages sent to target, or fails
// the test after timeout. cond runs with the channel locked: it must not call
// the channel's methods.
func (m *Memory) WaitFor(t TB, target string, timeout time.Duration, what string, cond func([]Sent) bool) []Sent {
	t.Helper()
	deadline := time.Now().Add(timeout)
	stop := time.AfterFunc(timeout, func() {
		m.mu.Lock()
		m.cond.Broadcast()
		m.mu.Unlock()
	})
	defer stop.Stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		got := m.sentLocked(target)
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s in %q; sent so far: %+v", timeout, what, target, got)
		}
		m.cond.Wait()
	}
}

// WaitTypingOff waits until no typing indicator is active in target.
func (m *Memory) WaitTypingOff(t TB, target string, timeout time.Duration) {
	t.Helper()
	m.WaitFor(t, target, timeout, "typing to stop", func([]Sent) bool { return m.typing[target] == 0 })
}

// WaitSent waits until at least n messages were sent to target.
func (m *Memory) WaitSent(t TB, target string, n int, timeout time.Duration) []Sent {
	t.Helper()
	return m.WaitFor(t, target, timeout, fmt.Sprintf("%d message(s)", n), func(s []Sent) bool { return len(s) >= n })
}
