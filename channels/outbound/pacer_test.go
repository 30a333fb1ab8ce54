package outbound_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/memory"
)

// pacedChannel records the order of slot waits and sends; its first send
// fails with a temporary error so a retry is exercised.
type pacedChannel struct {
	mu     sync.Mutex
	events *[]string
	sends  int
}

func (c *pacedChannel) Name() string                                   { return "paced" }
func (c *pacedChannel) Run(ctx context.Context, _ channels.Sink) error { <-ctx.Done(); return nil }
func (c *pacedChannel) Format(md string) []channels.Chunk {
	return []channels.Chunk{{Text: md, Plain: md}}
}
func (c *pacedChannel) WaitSendSlot(context.Context, channels.Target) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.events = append(*c.events, "slot")
	return nil
}
func (c *pacedChannel) Send(_ context.Context, out channels.Outgoing) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sends++
	if out.Paced {
		*c.events = append(*c.events, "send(paced)")
	} else {
		*c.events = append(*c.events, "send(unpaced)")
	}
	if c.sends == 1 {
		return "", channels.Temporary(errors.New("flaky"))
	}
	return "m1", nil
}

type orderOutbox struct{ events *[]string }

func (o orderOutbox) OutboxIntent(context.Context, memory.OutboxRecord) (uint64, error) {
	*o.events = append(*o.events, "intent")
	return 1, nil
}
func (o orderOutbox) OutboxResult(context.Context, uint64, string, string, string) error {
	*o.events = append(*o.events, "receipt")
	return nil
}
func (o orderOutbox) OutboxForTurn(context.Context, string) ([]memory.OutboxRecord, error) {
	return nil, nil
}

// TestPacerSlotBeforeIntent: for a channel that paces its sends, Outbound
// waits for the send slot before recording the send intent, so the
// intent-to-receipt window (where a crash can duplicate) spans the platform
// call only; the first Send is marked Paced and a retry waits for a new slot
// inside Send (Paced false).
func TestPacerSlotBeforeIntent(t *testing.T) {
	var events []string
	ch := &pacedChannel{events: &events}
	out := outbound.New(orderOutbox{events: &events}, outbound.Options{BaseDelay: time.Millisecond,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	_, err := out.Deliver(context.Background(), ch, outbound.Delivery{Target: channels.Target{Channel: "paced", ChatID: "1"},
		TurnID: "in-1", Markdown: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"slot", "intent", "send(paced)", "send(unpaced)", "receipt"}
	if len(events) != len(want) {
		t.Fatalf("events %q, want %q", events, want)
	}
	for i := range want {
		if events[i] != want[i] {
			t.Fatalf("events %q, want %q", events, want)
		}
	}
}
