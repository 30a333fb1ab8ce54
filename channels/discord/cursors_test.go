package discord

import (
	"context"
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
