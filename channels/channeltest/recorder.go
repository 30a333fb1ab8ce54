package channeltest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

// recorder is the sink the suite runs adapters with: it records every
// message it is handed and accepts it.
type recorder struct {
	mu      sync.Mutex
	msgs    []channels.Message
	changed chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

// Handle records msg and accepts it.
func (r *recorder) Handle(_ context.Context, msg channels.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, msg)
	close(r.changed)
	r.changed = make(chan struct{})
	return nil
}

func (r *recorder) all() []channels.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]channels.Message(nil), r.msgs...)
}

// waitFor waits until cond holds for the messages handed so far.
func (r *recorder) waitFor(t *testing.T, what string, cond func([]channels.Message) bool) []channels.Message {
	t.Helper()
	deadline := time.NewTimer(Timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		msgs, ch := append([]channels.Message(nil), r.msgs...), r.changed
		r.mu.Unlock()
		if cond(msgs) {
			return msgs
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out after %s waiting for %s; the sink got:\n%s", Timeout, what, describe(msgs))
			return nil
		}
	}
}

// waitText waits for a message whose Text is text and returns the first.
func (r *recorder) waitText(t *testing.T, text string) channels.Message {
	t.Helper()
	msgs := r.waitFor(t, fmt.Sprintf("a message with text %q", text), func(ms []channels.Message) bool {
		return len(withText(ms, text)) > 0
	})
	return withText(msgs, text)[0]
}

// withText returns the messages whose Text is text.
func withText(msgs []channels.Message, text string) []channels.Message {
	var out []channels.Message
	for _, m := range msgs {
		if m.Text == text {
			out = append(out, m)
		}
	}
	return out
}

// indexOf is the position of the first message with text, or -1.
func indexOf(msgs []channels.Message, text string) int {
	for i, m := range msgs {
		if m.Text == text {
			return i
		}
	}
	return -1
}

func describe(msgs []channels.Message) string {
	if len(msgs) == 0 {
		return "  (nothing)"
	}
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "  %s id=%q text=%q direct=%t mentioned=%t self=%t bot=%t media=%d\n",
			m.Target(), m.MessageID, m.Text, m.Direct, m.Mentioned, m.FromSelf, m.Sender.IsBot, len(m.Media))
	}
	return b.String()
}
