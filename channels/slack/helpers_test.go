package slack

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakeslack"
)

// wait bounds every wait for something the test caused: a hang
// detector, not a performance bound (milliseconds on a quiet machine,
// seconds on a loaded one).
const wait = time.Minute

// recorder is a channels.Sink that records messages; fail decides per message
// whether Handle reports an error; block, when set, holds Handle until closed.
type recorder struct {
	mu      sync.Mutex
	msgs    []channels.Message
	changed chan struct{}
	fail    func(channels.Message) error
	block   chan struct{}
	entered chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) Handle(ctx context.Context, msg channels.Message) error {
	r.mu.Lock()
	block, entered, fail := r.block, r.entered, r.fail
	r.mu.Unlock()
	if entered != nil {
		select {
		case entered <- struct{}{}:
		default:
		}
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var err error
	if fail != nil {
		err = fail(msg)
	}
	r.mu.Lock()
	r.msgs = append(r.msgs, msg)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	return err
}

func (r *recorder) all() []channels.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]channels.Message(nil), r.msgs...)
}

// waitN waits until the sink saw at least n messages and returns them.
func (r *recorder) waitN(t *testing.T, n int) []channels.Message {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		got, ch := len(r.msgs), r.changed
		r.mu.Unlock()
		if got >= n {
			return r.all()
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("sink saw %d messages, want %d: %+v", got, n, r.all())
		}
	}
}

func testOptions(f *fakeslack.Server) Options {
	return Options{
		BotToken:         f.BotToken(),
		AppToken:         f.AppToken(),
		APIURL:           f.APIURL(),
		PingInterval:     2 * time.Second,
		HelloTimeout:     300 * time.Millisecond,
		WatchdogTimeout:  time.Second,
		ReconnectMin:     10 * time.Millisecond,
		HandshakeTimeout: 2 * time.Second,
		EditInterval:     10 * time.Millisecond,
	}
}

type running struct {
	c    *Adapter
	sink *recorder
	errc chan error
	stop func() error
}

// start runs the adapter against the fake until the test ends.
func start(t *testing.T, f *fakeslack.Server, opts Options, sink *recorder) *running {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx, sink) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-errc:
			case <-time.After(wait):
				runErr = errors.New("Run did not return after cancel")
			}
		})
		return runErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return &running{c: c, sink: sink, errc: errc, stop: stop}
}

// waitReady waits until the adapter reports Ready.
func waitReady(t *testing.T, c *Adapter) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !c.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("adapter never became ready")
		}
		time.Sleep(2 * time.Millisecond)
	}
}
