package matrix

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakematrix"
)

const (
	alice     = "@alice:fake.test"
	bob       = "@bob:fake.test"
	dmRoom    = "!dm:fake.test"
	groupRoom = "!group:fake.test"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// memKV is an in-memory KV.
type memKV struct {
	mu sync.Mutex
	m  map[string][]byte
}

func newMemKV() *memKV { return &memKV{m: map[string][]byte{}} }

func (k *memKV) KVGet(_ context.Context, key string) ([]byte, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[key]
	return v, ok, nil
}

func (k *memKV) KVPut(_ context.Context, key string, val []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[key] = append([]byte(nil), val...)
	return nil
}

func (k *memKV) get(key string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return string(k.m[key])
}

// newFake is a homeserver with a direct room and a group, both joined.
func newFake(t *testing.T, opts fakematrix.Options) *fakematrix.Server {
	fake := fakematrix.New(t, opts)
	fake.AddRoom(fakematrix.Room{ID: dmRoom, Members: []string{alice}, Joined: true, Direct: true})
	fake.AddRoom(fakematrix.Room{ID: groupRoom, Members: []string{alice, bob}, Joined: true})
	return fake
}

// testOptions are fast options against fake; the logs go to logs.
func testOptions(fake *fakematrix.Server, kv KV, logs *syncBuffer) Options {
	return Options{
		Homeserver: fake.URL(), UserID: fake.UserID(), AccessToken: fake.Token(), KV: kv,
		PollTimeout: 2 * time.Second, RequestTimeout: 10 * time.Second,
		RetryMin: 10 * time.Millisecond, RetryMax: 200 * time.Millisecond, TypingInterval: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// recorder is a sink that records messages and may refuse them.
type recorder struct {
	mu      sync.Mutex
	msgs    []channels.Message
	changed chan struct{}
	refuse  func(channels.Message) error
	admit   func(channel, user string, direct bool) bool
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) Handle(_ context.Context, m channels.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refuse != nil {
		if err := r.refuse(m); err != nil {
			return err
		}
	}
	r.msgs = append(r.msgs, m)
	close(r.changed)
	r.changed = make(chan struct{})
	return nil
}

func (r *recorder) all() []channels.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]channels.Message(nil), r.msgs...)
}

// admitter is a recorder that answers invites.
type admitter struct{ *recorder }

func (a admitter) Admits(_ context.Context, channel, user string, direct bool) (bool, error) {
	return a.admit(channel, user, direct), nil
}

// withText returns the recorded messages with text.
func withText(ms []channels.Message, text string) []channels.Message {
	var out []channels.Message
	for _, m := range ms {
		if m.Text == text {
			out = append(out, m)
		}
	}
	return out
}

// running runs a on sink until the test ends and waits until it is ready.
func running(t *testing.T, a *Adapter, sink channels.Sink) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, sink) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(20 * time.Second)
	for !a.Ready() {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("Run ended before ready: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("adapter not ready")
		}
	}
	return stop
}
