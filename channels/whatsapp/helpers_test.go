package whatsapp

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakewhatsapp"
)

// sink records what the adapter hands on; fail makes Handle refuse.
type sink struct {
	mu      sync.Mutex
	msgs    []channels.Message
	fail    int // refuse this many Handle calls
	changed chan struct{}
}

func newSink() *sink { return &sink{changed: make(chan struct{})} }

func (s *sink) Handle(_ context.Context, m channels.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { close(s.changed); s.changed = make(chan struct{}) }()
	if s.fail > 0 {
		s.fail--
		return errors.New("store unavailable")
	}
	s.msgs = append(s.msgs, m)
	return nil
}

func (s *sink) all() []channels.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]channels.Message(nil), s.msgs...)
}

// wait waits until n messages arrived.
func (s *sink) wait(t *testing.T, n int) []channels.Message {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		s.mu.Lock()
		got, ch := append([]channels.Message(nil), s.msgs...), s.changed
		s.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for %d messages; got %d: %+v", n, len(got), got)
		}
	}
}

// running starts a rig's adapter with a fresh sink and waits until ready.
func running(t *testing.T, fo fakewhatsapp.Options, mod ...func(*Options)) (*fakewhatsapp.Server, *Adapter, *sink, string) {
	t.Helper()
	fake, a, hs := newRig(t, fo, mod...)
	s := newSink()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, s) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	fake.WaitFor(t, 20*time.Second, "the adapter to be ready", a.Ready)
	return fake, a, s, hs.URL + WebhookPath
}

// clock is a settable clock shared by the fake and the adapter.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
