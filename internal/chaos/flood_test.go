package chaos

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/internal/loadtest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// floodChannel records every answer in order, as one chat would show them.
type floodChannel struct {
	mu      sync.Mutex
	answers []string
}

func (c *floodChannel) Name() string                                   { return "flood" }
func (c *floodChannel) Run(ctx context.Context, _ channels.Sink) error { <-ctx.Done(); return nil }
func (c *floodChannel) Format(md string) []channels.Chunk {
	return []channels.Chunk{{Text: md, Plain: md}}
}
func (c *floodChannel) Send(_ context.Context, out channels.Outgoing) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answers = append(c.answers, out.Text)
	return "a" + strconv.Itoa(len(c.answers)), nil
}

func (c *floodChannel) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.answers)
}

func (c *floodChannel) all() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.answers, "\n")
}

// TestFloodOneChatBackpressure pushes 10,000 messages into one chat as fast
// as an adapter can. Beyond MaxQueue the handler answers ErrBusy, so the
// adapter does not acknowledge and redelivers later (played here by retrying
// the same message id); the queue never grows past MaxQueue, memory stays
// bounded, and every message is answered exactly once, in order (messages
// that arrive mid-turn join the next turn, so one answer covers several).
func TestFloodOneChatBackpressure(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: 10,000 messages")
	}
	const total, maxQueue = 10000, 200
	// The model is stuck until the handler has pushed back a few times (so
	// the queue surely fills), then answers in 2ms.
	gate := make(chan struct{})
	var gateOnce sync.Once
	llm := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
		select {
		case <-gate:
		case <-time.After(30 * time.Second):
		}
		out := fakellm.Echo()(r)
		out.Delay = 2 * time.Millisecond
		out.ChunkSize = 1 << 20
		return out
	})
	dir := t.TempDir()
	cfg := loadtest.InprocConfig(dir, llm.URL, 4)
	cfg.Agent.MaxHistory = 4 // keep the model requests small; history is not under test
	// The flood is about queueing and memory, not fsync: skip fsync so the
	// 10,000 sequential Accepts take seconds, not minutes.
	st, err := bolt.Open(filepath.Join(dir, "flood.db"), memory.Options{NoSync: true, BatchDelay: 50 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ag, err := daemon.NewAgent(cfg, daemon.AgentDeps{Sessions: st, Tools: agent.NewRegistry()}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := hub.NewHandler(hub.HandlerOptions{Store: st, Agent: ag, MaxQueue: maxQueue, MaxConcurrentTurns: 4,
		Access: channels.AccessPolicy{Mode: "open"}})
	ch := &floodChannel{}
	h.Register(ch)
	defer h.Close(context.Background())

	var maxDepth atomic.Int64
	var maxHeap atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if d := int64(h.Stats().QueueDepth); d > maxDepth.Load() {
				maxDepth.Store(d)
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > maxHeap.Load() {
				maxHeap.Store(ms.HeapAlloc)
			}
		}
	}()

	ctx := context.Background()
	busy := 0
	start := time.Now()
	for i := range total {
		msg := channels.Message{Channel: "flood", ChatID: "1", MessageID: "m" + itoa64(int64(i)),
			Sender: channels.Sender{ID: "1", Name: "flooder"}, Text: loadtest.Token(1, i), Direct: true, Time: time.Now()}
		for {
			err := h.Handle(ctx, msg)
			if err == nil {
				break
			}
			if !errors.Is(err, hub.ErrBusy) {
				t.Fatalf("message %d: %v", i, err)
			}
			busy++ // not acknowledged: the platform sends it again later
			if busy == 20 {
				gateOnce.Do(func() { close(gate) })
			}
			time.Sleep(time.Millisecond)
		}
	}
	gateOnce.Do(func() { close(gate) })
	// Wait for the last answer while answers keep coming (a loaded machine
	// is slower, not stuck): give up after eventWait without a new one.
	last := loadtest.Token(1, total-1)
	for answers, moved := -1, time.Now(); !strings.Contains(ch.all(), last); time.Sleep(5 * time.Millisecond) {
		if n := ch.count(); n > answers {
			answers, moved = n, time.Now()
		}
		if time.Since(moved) > eventWait {
			t.Fatalf("the last message was not answered: no answer for %s after %d", eventWait, answers)
		}
	}
	close(stop)
	<-sampled

	if busy == 0 {
		t.Error("the handler never pushed back with ErrBusy: the queue is unbounded")
	}
	if d := maxDepth.Load(); d > maxQueue {
		t.Errorf("queue depth reached %d, beyond MaxQueue %d", d, maxQueue)
	}
	all := ch.all()
	pos := -1
	for i := range total {
		tok := loadtest.Token(1, i)
		if n := strings.Count(all, tok); n != 1 { // "z" ends a token: q1x1z is not inside q1x10z
			t.Fatalf("%s answered %d times", tok, n)
		}
		p := strings.Index(all, tok)
		if p < pos {
			t.Fatalf("%s answered before an earlier message: processing out of order", tok)
		}
		pos = p
	}
	t.Logf("10,000 messages in %v: %d answers (turns), %d ErrBusy pushbacks, max queue depth %d, peak heap %.1f MiB",
		time.Since(start).Round(time.Millisecond), strings.Count(all, "echo:"), busy, maxDepth.Load(), float64(maxHeap.Load())/(1<<20))
}
