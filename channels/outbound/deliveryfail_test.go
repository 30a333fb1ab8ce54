package outbound_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/outbound"
)

// syncLog is a goroutine-safe log sink.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

type countingObserver struct {
	mu       sync.Mutex
	outcomes map[string]int
}

func (c *countingObserver) ChunkSent(string) {}
func (c *countingObserver) Delivery(outcome string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.outcomes[outcome]++
}

// refusingChannel refuses every send with err.
type refusingChannel struct {
	*console.Memory
	mu    sync.Mutex
	err   error
	calls int
}

func (r *refusingChannel) Send(context.Context, channels.Outgoing) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	return "", r.err
}

// Issue 13 defect 13: a delivery the platform keeps refusing was retried and
// given up with only DEBUG lines. Every failed delivery (after its retries)
// is logged at WARN with the platform's error text and the target, counted
// (Stats, the deliveries metric) and shown by /status; a permanent refusal
// is sent once, not retried.
func TestFailedDeliveryIsVisible(t *testing.T) {
	cases := []struct {
		name      string
		err       error
		wantCalls int
		wantKind  string
	}{
		{"temporary until attempts run out", channels.Temporary(errors.New("telegram: error response from telegram for method sendMessage, 502 Bad Gateway")), 3, "temporary"},
		{"permanent refusal", channels.Permanent(errors.New("telegram: forbidden, Forbidden: bot was blocked by the user")), 1, "permanent"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			logs := &syncLog{}
			obs := &countingObserver{outcomes: map[string]int{}}
			out := outbound.New(nil, outbound.Options{
				Logger:      slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
				MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, Observer: obs,
			})
			ch := &refusingChannel{Memory: console.NewMemory("memory", 4000, 0), err: c.err}
			target := channels.Target{Channel: "memory", ChatID: "c9"}
			_, err := out.Deliver(context.Background(), ch, outbound.Delivery{Target: target, TurnID: "t1", Markdown: "hello"})
			if err == nil {
				t.Fatal("Deliver succeeded against a refusing platform")
			}
			if ch.calls != c.wantCalls {
				t.Errorf("platform called %d times, want %d", ch.calls, c.wantCalls)
			}
			platformText := strings.SplitN(c.err.Error(), ": ", 2)[1] // after the kind prefix
			log := logs.String()
			var warn string
			for _, l := range strings.Split(log, "\n") {
				if strings.Contains(l, "level=WARN") && strings.Contains(l, "delivery failed") {
					warn = l
				}
			}
			if warn == "" || !strings.Contains(warn, "target=memory:c9") || !strings.Contains(warn, platformText) || !strings.Contains(warn, "kind="+c.wantKind) {
				t.Errorf("no WARN line naming the target, the kind and the platform's error %q:\n%s", platformText, log)
			}
			st := out.Stats()
			if st.Failed != 1 || obs.outcomes["failed"] != 1 {
				t.Errorf("failed deliveries counted %d (metric %d), want 1", st.Failed, obs.outcomes["failed"])
			}
			if !strings.Contains(st.LastFailure, "memory:c9") || !strings.Contains(st.LastFailure, platformText) {
				t.Errorf("LastFailure %q lacks the target or the error", st.LastFailure)
			}
		})
	}
}
