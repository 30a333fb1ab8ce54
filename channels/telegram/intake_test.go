package telegram

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// TestBatchChatsAcceptedTogether: the updates of one getUpdates batch from
// different chats are handed to the sink at the same time, so their inbox
// writes share a commit instead of queueing one behind the other (each chat's
// reply waited for every accept before it in the batch). The sink here holds
// chat 1's message until chat 2's has arrived: handled one after the other,
// chat 2's never arrives.
func TestBatchChatsAcceptedTogether(t *testing.T) {
	fake := faketelegram.New(t, faketelegram.Options{})
	fake.UserSays(1, "first chat")
	fake.UserSays(2, "second chat")
	ch, err := New(testOptions(fake, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var got []string
	sink := channels.SinkFunc(func(ctx context.Context, m channels.Message) error {
		mu.Lock()
		got = append(got, m.Text)
		mu.Unlock()
		if m.ChatID == "2" {
			once.Do(func() { close(second) })
			return nil
		}
		select {
		case <-second:
			return nil
		case <-time.After(waitLong):
			t.Errorf("chat 2's message was not handed over while chat 1's was being accepted")
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	stop := startRun(t, ch, sink)
	defer stop()
	fake.WaitConfirmed(t, 1002, waitLong)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Errorf("sink saw %q, want each message once", got)
	}
}

// TestBatchKeepsEachChatInOrder: a batch holding several messages of two
// chats hands each chat's messages over in order, and a refused message is
// fetched again — with nothing after it in its chat handed over first —
// while the other chat goes on.
func TestBatchKeepsEachChatInOrder(t *testing.T) {
	fake := faketelegram.New(t, faketelegram.Options{})
	for i := range 3 {
		fake.UserSays(1, "a"+string(rune('0'+i)))
		fake.UserSays(2, "b"+string(rune('0'+i)))
	}
	ch, err := New(testOptions(fake, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string][]string{}
	failed := false
	done := make(chan struct{})
	sink := channels.SinkFunc(func(ctx context.Context, m channels.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if m.Text == "a1" && !failed {
			failed = true
			seen[m.ChatID] = append(seen[m.ChatID], m.Text+"(refused)")
			return channels.Temporary(context.DeadlineExceeded)
		}
		seen[m.ChatID] = append(seen[m.ChatID], m.Text)
		if m.Text == "a2" {
			close(done)
		}
		return nil
	})
	stop := startRun(t, ch, sink)
	defer stop()
	select {
	case <-done:
	case <-time.After(waitLong):
		t.Fatal("chat 1's last message never accepted")
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	// Chat 2's messages may come again (redelivered with the refused one;
	// the handler's dedup drops repeats) but never out of order.
	first := func(l []string) string {
		var out []string
		for _, s := range l {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		return strings.Join(out, ",")
	}
	if got := strings.Join(seen["1"], ","); got != "a0,a1(refused),a1,a2" {
		t.Errorf("chat 1 saw %s, want a0,a1(refused),a1,a2", got)
	}
	if got := first(seen["2"]); got != "b0,b1,b2" {
		t.Errorf("chat 2 saw %v, want b0,b1,b2 in order", seen["2"])
	}
}
