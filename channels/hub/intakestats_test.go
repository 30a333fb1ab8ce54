package hub_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// slowInbox is a store whose inbox write waits for the test (a slow disk).
type slowInbox struct {
	*bolt.Store
	entered, release chan struct{}
}

func (s *slowInbox) Accept(ctx context.Context, item memory.InboxItem) (uint64, bool, error) {
	s.entered <- struct{}{}
	<-s.release
	return s.Store.Accept(ctx, item)
}

// Stats count a message that is being taken in (received, its inbox write
// not done, its session not yet active): the daemon's idle memory release
// must not take such a moment for idle (internal/daemon, idleSince).
func TestStatsCountAMessageBeingTakenIn(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Text("ok"))
	st, err := bolt.Open(filepath.Join(t.TempDir(), "switchboard.db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	slow := &slowInbox{Store: st, entered: make(chan struct{}), release: make(chan struct{})}
	ag, err := agent.New(agent.Options{BaseURL: llm.URL, APIKey: "test-key", Model: "fake-model",
		Timeout: 5 * time.Second, HTTPClient: llm.HTTPClient(), Sessions: st})
	if err != nil {
		t.Fatal(err)
	}
	h := hub.NewHandler(hub.HandlerOptions{Store: handlerStore{slow}, Agent: ag, Access: openAccess(),
		Outbound: outbound.New(st, outbound.Options{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		h.Close(ctx)
		st.Close()
	})
	msg := channels.Message{Channel: "memory", ChatID: "c1", MessageID: "m1", Text: "hello", Direct: true,
		Sender: channels.Sender{ID: "u1", Name: "U"}, Time: time.Now()}
	done := make(chan error, 1)
	go func() { done <- h.Handle(context.Background(), msg) }()
	<-slow.entered
	if s := h.Stats(); s.Received != 1 || s.Intake != 1 || s.ActiveSessions != 0 {
		t.Errorf("during the inbox write: received %d, intake %d, active sessions %d; want 1, 1, 0", s.Received, s.Intake, s.ActiveSessions)
	}
	close(slow.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := h.Stats(); s.Intake != 0 {
		t.Errorf("after the message was queued: intake %d, want 0", s.Intake)
	}
}
