package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
)

// gateSink is a sink whose Handle blocks for the chats in gates until the
// gate is closed (or ctx ends: then the message is refused, as the real
// handler refuses when it cannot persist).
type gateSink struct {
	mu          sync.Mutex
	msgs        []channels.Message
	gates       map[string]chan struct{}
	inflight    int
	maxInflight int
	entered     chan string // chat ids, as Handle calls start
	signal      chan struct{}
}

func newGateSink(blocked ...string) *gateSink {
	s := &gateSink{gates: map[string]chan struct{}{}, entered: make(chan string, 1000), signal: make(chan struct{}, 1)}
	for _, c := range blocked {
		s.gates[c] = make(chan struct{})
	}
	return s
}

func (s *gateSink) Handle(ctx context.Context, m channels.Message) error {
	s.mu.Lock()
	s.inflight++
	s.maxInflight = max(s.maxInflight, s.inflight)
	gate := s.gates[m.ChatID]
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight--
		s.mu.Unlock()
		select {
		case s.signal <- struct{}{}:
		default:
		}
	}()
	s.entered <- m.ChatID
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return fmt.Errorf("not persisted: %w", ctx.Err())
		}
	} else {
		time.Sleep(time.Millisecond) // a commit's worth of work, so Handles overlap
	}
	s.mu.Lock()
	s.msgs = append(s.msgs, m)
	s.mu.Unlock()
	return nil
}

func (s *gateSink) release(chat string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.gates[chat])
	delete(s.gates, chat)
}

func (s *gateSink) got() []channels.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}

// of returns the ids of the accepted messages of chat, in order.
func (s *gateSink) of(chat string) []string {
	var out []string
	for _, m := range s.got() {
		if m.ChatID == chat {
			out = append(out, m.MessageID)
		}
	}
	return out
}

// waitFor waits until chat has n accepted messages.
func (s *gateSink) waitFor(t *testing.T, chat string, n int) []string {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		if got := s.of(chat); len(got) >= n {
			return got
		}
		select {
		case <-s.signal:
		case <-deadline.C:
			t.Fatalf("sink: timed out waiting for %d messages of %s; got %v", n, chat, s.of(chat))
		}
	}
}

func (s *gateSink) waitEntered(t *testing.T, chat string) {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case c := <-s.entered:
			if c == chat {
				return
			}
		case <-deadline:
			t.Fatalf("no Handle call for %s", chat)
		}
	}
}

// runWith runs an adapter against fake with sink until the returned stop is
// called; stop waits for Run to return.
func runWith(t *testing.T, fake *fakediscord.Server, sink channels.Sink, mod func(*Options)) (ch *Adapter, stop func()) {
	t.Helper()
	ch, _ = newChannel(t, fake, mod)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, sink) }()
	fake.WaitFor(t, wait, "adapter Ready()", ch.Ready)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(wait):
				t.Errorf("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return ch, stop
}

func dm(i int) string { return fmt.Sprintf("5000000000000001%02d", i) }

func say(fake *fakediscord.Server, chat string, n int) []string {
	var ids []string
	for i := range n {
		ids = append(ids, fake.UserSays(chat, userID, fmt.Sprintf("%s #%d", chat, i), fakediscord.SayOptions{}).ID)
	}
	return ids
}

// A chat whose Handle is slow (blocked) does not hold up other chats, and
// the other chat's messages still arrive in order.
func TestIntakeSlowChatDoesNotHoldUpOthers(t *testing.T) {
	t.Parallel()
	fake := fakediscord.Start(t, fakediscord.Options{Token: testToken, HeartbeatInterval: 500 * time.Millisecond})
	chatA, chatB := dm(1), dm(2)
	sink := newGateSink(chatB)
	runWith(t, fake, sink, nil)

	b := say(fake, chatB, 3)
	sink.waitEntered(t, chatB)
	a := say(fake, chatA, 5)
	if got := sink.waitFor(t, chatA, 5); !slices.Equal(got, a) {
		t.Fatalf("chat A got %v, want %v in order", got, a)
	}
	if got := sink.of(chatB); len(got) != 0 {
		t.Fatalf("chat B's blocked messages were accepted: %v", got)
	}
	sink.release(chatB)
	if got := sink.waitFor(t, chatB, 3); !slices.Equal(got, b) {
		t.Fatalf("chat B got %v, want %v in order", got, b)
	}
}

// Many chats at once: each chat's messages reach the sink in order, exactly
// once, and different chats are handled concurrently.
func TestIntakeKeepsEachChatInOrderAcrossConcurrentChats(t *testing.T) {
	t.Parallel()
	fake := fakediscord.Start(t, fakediscord.Options{Token: testToken, HeartbeatInterval: 500 * time.Millisecond})
	sink := newGateSink()
	runWith(t, fake, sink, func(o *Options) { o.IntakeWorkers = 4 })
	const chats, per = 8, 15
	want := map[string][]string{}
	for i := range per {
		for c := range chats {
			chat := dm(c)
			want[chat] = append(want[chat], fake.UserSays(chat, userID, fmt.Sprint("m", i), fakediscord.SayOptions{}).ID)
		}
	}
	for chat, ids := range want {
		if got := sink.waitFor(t, chat, per); !slices.Equal(got, ids) {
			t.Errorf("chat %s got %v, want %v", chat, got, ids)
		}
	}
	if n := len(sink.got()); n != chats*per {
		t.Errorf("sink accepted %d messages, want %d", n, chats*per)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.maxInflight < 2 {
		t.Errorf("at most %d Handle call(s) ran at once; want chats handled concurrently", sink.maxInflight)
	}
}

// Stopping with messages in flight and queued: the saved cursor never passes
// a message the sink did not accept, and the next process delivers them, in
// order, once.
func TestIntakeStopWithMessagesInFlightLosesNothing(t *testing.T) {
	t.Parallel()
	fake := fakediscord.Start(t, fakediscord.Options{Token: testToken, HeartbeatInterval: 500 * time.Millisecond})
	kv := &memKV{m: map[string][]byte{}}
	withKV := func(o *Options) { o.Cursors = kv; o.CursorFlush = 10 * time.Millisecond }
	chatA, chatB := dm(1), dm(2)
	sink := newGateSink(chatB)
	_, stop := runWith(t, fake, sink, withKV)
	a := say(fake, chatA, 1)
	sink.waitFor(t, chatA, 1)
	b := say(fake, chatB, 3)
	sink.waitEntered(t, chatB)
	stop()
	if got := sink.of(chatB); len(got) != 0 {
		t.Fatalf("blocked messages accepted: %v", got)
	}
	raw, _, _ := kv.KVGet(context.Background(), cursorsKey)
	var saved map[string]string
	if err := json.Unmarshal(raw, &saved); err != nil {
		t.Fatalf("saved cursors %q: %v", raw, err)
	}
	if cur, ok := saved[chatB]; !ok || !snowLess(cur, b[0]) {
		t.Fatalf("saved cursor of chat B = %q (present %t); want one before the unaccepted %s", cur, ok, b[0])
	}
	if saved[chatA] != a[0] {
		t.Errorf("saved cursor of chat A = %q, want %s", saved[chatA], a[0])
	}

	sink2 := newGateSink()
	runWith(t, fake, sink2, withKV)
	if got := sink2.waitFor(t, chatB, 3); !slices.Equal(got, b) {
		t.Fatalf("after restart chat B got %v, want %v", got, b)
	}
	if got := sink2.of(chatA); len(got) != 0 {
		t.Errorf("chat A's accepted message was delivered again: %v", got)
	}
}

// Beyond the bounds nothing is lost: messages refused by a full lane are
// caught up after its backlog, and a chat refused because too many chats are
// busy is caught up by the retry loop — each in order, once.
func TestIntakeFullLanesAreCaughtUpFromHistory(t *testing.T) {
	t.Parallel()
	fake := fakediscord.Start(t, fakediscord.Options{Token: testToken, HeartbeatInterval: 500 * time.Millisecond})
	chatA, chatB := dm(1), dm(2)
	sink := newGateSink(chatB)
	ch, _ := runWith(t, fake, sink, func(o *Options) { o.IntakeDepth = 2; o.IntakeMaxChats = 1 })
	b := say(fake, chatB, 1)
	sink.waitEntered(t, chatB)
	b = append(b, say(fake, chatB, 5)...) // 2 queued, 3 refused
	a := say(fake, chatA, 2)              // refused: chat B holds the only lane
	// Events are submitted in arrival order, so once chat A is marked behind
	// every message of chat B was submitted (or refused) too.
	fake.WaitFor(t, wait, "chat A refused and marked behind", func() bool {
		cur, ok := ch.cursorOf(chatA)
		return ok && cur.behind
	})
	sink.release(chatB)
	if got := sink.waitFor(t, chatB, 6); !slices.Equal(got, b) {
		t.Fatalf("chat B got %v, want %v", got, b)
	}
	if got := sink.waitFor(t, chatA, 2); !slices.Equal(got, a) {
		t.Fatalf("chat A got %v, want %v", got, a)
	}
}
