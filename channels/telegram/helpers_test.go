package telegram

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// waitLong bounds every wait for something the test caused: a hang
// detector, not a performance bound (milliseconds on a quiet machine,
// seconds on a loaded one).
const waitLong = time.Minute

// recorder is a channels.Sink that records messages; fail, when set, decides
// per call whether Handle fails.
type recorder struct {
	mu     sync.Mutex
	msgs   []channels.Message
	calls  int
	fail   func(call int, m channels.Message) error
	signal chan struct{}
}

func newRecorder() *recorder { return &recorder{signal: make(chan struct{}, 1024)} }

func (r *recorder) sink() channels.Sink {
	return channels.SinkFunc(func(ctx context.Context, m channels.Message) error {
		r.mu.Lock()
		r.calls++
		call := r.calls
		fail := r.fail
		r.mu.Unlock()
		if fail != nil {
			if err := fail(call, m); err != nil {
				r.mu.Lock()
				r.msgs = append(r.msgs, m) // seen, even if rejected
				r.mu.Unlock()
				r.signal <- struct{}{}
				return err
			}
		}
		r.mu.Lock()
		r.msgs = append(r.msgs, m)
		r.mu.Unlock()
		r.signal <- struct{}{}
		return nil
	})
}

func (r *recorder) all() []channels.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]channels.Message(nil), r.msgs...)
}

// wait returns once at least n messages reached the sink.
func (r *recorder) wait(t *testing.T, n int) []channels.Message {
	t.Helper()
	deadline := time.NewTimer(waitLong)
	defer deadline.Stop()
	for {
		if got := r.all(); len(got) >= n {
			return got
		}
		select {
		case <-r.signal:
		case <-deadline.C:
			t.Fatalf("sink got %d message(s), want %d: %+v", len(r.all()), n, r.all())
		}
	}
}

// syncBuffer collects log output across goroutines.
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

type rig struct {
	fake *faketelegram.Server
	ch   *Adapter
	rec  *recorder
	logs *syncBuffer
	stop func() // cancels Run and waits for it; idempotent
}

// testOptions are fast settings for a channel pointed at fake.
func testOptions(fake *faketelegram.Server, logs *syncBuffer) Options {
	return Options{
		Token:          fake.Token(),
		APIURL:         fake.URL(),
		PollTimeout:    time.Second,
		RequestTimeout: 5 * time.Second,
		RetryMin:       5 * time.Millisecond,
		RetryMax:       20 * time.Millisecond,
		TypingInterval: 20 * time.Millisecond,
		PerChatRate:    rate.Inf,
		GlobalRate:     rate.Inf,
		Logger:         slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// newRig starts a fake server and a polling channel running against it.
func newRig(t *testing.T, mutate func(*Options)) *rig {
	t.Helper()
	fake := faketelegram.New(t, faketelegram.Options{})
	logs := &syncBuffer{}
	opts := testOptions(fake, logs)
	if mutate != nil {
		mutate(&opts)
	}
	ch, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r := &rig{fake: fake, ch: ch, rec: newRecorder(), logs: logs}
	r.stop = startRun(t, ch, r.rec.sink())
	t.Cleanup(func() {
		r.stop()
		if strings.Contains(logs.String(), fake.Token()) {
			t.Errorf("the bot token appeared in the logs:\n%s", logs.String())
		}
	})
	return r
}

// startRun runs ch.Run in a goroutine; the returned stop cancels it, waits
// for it to return and fails the test if Run returned an error.
func startRun(t *testing.T, ch *Adapter, sink channels.Sink) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, sink) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run returned %v", err)
				}
			case <-time.After(waitLong):
				t.Errorf("Run did not return after cancel")
			}
		})
	}
}

// waitReady waits until ch reports ready.
func waitReady(t *testing.T, ch *Adapter) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !ch.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("channel never became ready")
		}
		time.Sleep(2 * time.Millisecond)
	}
}
