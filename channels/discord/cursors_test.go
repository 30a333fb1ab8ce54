package discord

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
)

// memKV is an in-memory CursorStore.
type memKV struct {
	mu sync.Mutex
	m  map[string][]byte
}

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

// Messages sent while the daemon process is down are fetched from history
// by the next process, from the cursors the previous one saved.
func TestMessagesSentWhileStoppedAreFetchedAfterRestart(t *testing.T) {
	t.Parallel()
	kv := &memKV{m: map[string][]byte{}}
	withKV := func(o *Options) { o.Cursors = kv; o.CursorFlush = 10 * time.Millisecond }
	fake := fakediscord.Start(t, fakediscord.Options{Token: testToken, HeartbeatInterval: 500 * time.Millisecond})

	run := func() (*Adapter, *recSink, context.CancelFunc, chan error) {
		ch, _ := newChannel(t, fake, withKV)
		sink := newSink()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- ch.Run(ctx, sink) }()
		fake.WaitFor(t, wait, "adapter Ready()", ch.Ready)
		return ch, sink, cancel, done
	}

	_, sink1, stop1, done1 := run()
	first := fake.UserSays(dmID, userID, "before the restart", fakediscord.SayOptions{})
	sink1.wait(t, 1)
	stop1()
	if err := <-done1; err != nil {
		t.Fatalf("first run: %v", err)
	}
	fake.WaitFor(t, wait, "no live connection", func() bool { return !fake.Online() })

	missed := fake.UserSays(dmID, userID, "while you were down", fakediscord.SayOptions{})

	_, sink2, stop2, done2 := run()
	defer func() { stop2(); <-done2 }()
	got := sink2.wait(t, 1)
	if got[0].MessageID != missed.ID || got[0].Text != "while you were down" {
		t.Fatalf("after restart the adapter delivered %s, want the missed message %s", fmtMsgs(got), missed.ID)
	}
	for _, m := range got {
		if m.MessageID == first.ID {
			t.Fatalf("the message handled before the restart was delivered again: %s", fmtMsgs(got))
		}
	}
}

// slowKV is a CursorStore whose writes take a while (an fsynced commit) and
// are counted.
type slowKV struct {
	memKV
	puts  int
	delay time.Duration
}

func (k *slowKV) KVPut(ctx context.Context, key string, val []byte) error {
	time.Sleep(k.delay)
	k.mu.Lock()
	k.puts++
	k.mu.Unlock()
	return k.memKV.KVPut(ctx, key, val)
}

// TestNewChannelsBurstSavesTogether: many channels seen for the first time at
// once (a burst of first DMs) are each saved before their message goes on,
// without one store write per channel in a row: lanes waiting behind a save
// find their channel in it.
func TestNewChannelsBurstSavesTogether(t *testing.T) {
	t.Parallel()
	kv := &slowKV{memKV: memKV{m: map[string][]byte{}}, delay: 5 * time.Millisecond}
	c, err := New(Options{Token: testToken, Cursors: kv})
	if err != nil {
		t.Fatal(err)
	}
	const channels = 32
	var wg sync.WaitGroup
	missing := make(chan string, channels)
	for i := range channels {
		id := strconv.Itoa(1000 + i)
		wg.Go(func() {
			c.setCursor(id, "99")
			c.saveCursors(context.Background())
			raw, _, _ := kv.KVGet(context.Background(), cursorsKey)
			var saved map[string]string
			if json.Unmarshal(raw, &saved) != nil || saved[id] != "99" {
				missing <- id
			}
		})
	}
	wg.Wait()
	close(missing)
	for id := range missing {
		t.Errorf("channel %s was not saved when its save returned", id)
	}
	kv.mu.Lock()
	defer kv.mu.Unlock()
	if kv.puts >= channels/2 {
		t.Errorf("%d store writes for %d new channels", kv.puts, channels)
	}
}
