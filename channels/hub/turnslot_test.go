package hub_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// slowCommits is a real store whose turn commits for one session wait until
// released, as commits wait for a slow disk.
type slowCommits struct {
	*bolt.Store
	key     string
	waiting chan struct{} // closed when the held commit started
	release chan struct{}
}

func (s *slowCommits) CommitTurn(ctx context.Context, key string, c memory.TurnCommit) ([]uint64, error) {
	if key == s.key {
		close(s.waiting)
		<-s.release
	}
	return s.Store.CommitTurn(ctx, key, c)
}

// A turn waiting for its commit holds no turn slot: with
// max_concurrent_turns 1, another chat is answered while the first chat's
// commit waits for the disk, and the first answer follows once it is written.
func TestTurnWaitingForCommitFreesItsSlot(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Text("answered"))
	st, err := bolt.Open(filepath.Join(t.TempDir(), "switchboard.db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	s := &slowCommits{Store: st, key: "memory:c1", waiting: make(chan struct{}), release: make(chan struct{})}
	ag, err := agent.New(agent.Options{BaseURL: llm.URL, APIKey: "k", Model: "m", MaxRetries: 1,
		RetryBase: time.Millisecond, Timeout: 5 * time.Second, HTTPClient: llm.HTTPClient(), Sessions: s})
	if err != nil {
		t.Fatal(err)
	}
	mem := console.NewMemory("memory", 4000, 5*time.Millisecond)
	h := hub.NewHandler(hub.HandlerOptions{Store: s, Agent: ag, Access: openAccess(), MaxConcurrentTurns: 1,
		Outbound: outbound.New(s, outbound.Options{BaseDelay: time.Millisecond})})
	h.Register(mem)
	mem.Attach(h)
	released := false
	defer func() {
		if !released {
			close(s.release)
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		h.Close(ctx)
		_ = st.Close()
	}()
	say := func(chat, id string) {
		t.Helper()
		if err := mem.Say(context.Background(), channels.Message{ChatID: chat, MessageID: id,
			Sender: channels.Sender{ID: "u-" + chat, Name: "U"}, Text: "hello", Direct: true}); err != nil {
			t.Fatal(err)
		}
	}
	say("c1", "m1")
	select {
	case <-s.waiting:
	case <-time.After(wait):
		t.Fatal("chat c1's commit never started")
	}
	say("c2", "m2")
	if got := mem.WaitSent(t, "memory:c2", 1, wait); got[0].Text != "answered" {
		t.Fatalf("chat c2 got %q", got[0].Text)
	}
	if n := len(mem.Sent("memory:c1")); n != 0 {
		t.Fatalf("chat c1 answered before its commit was written (%d messages)", n)
	}
	close(s.release)
	released = true
	if got := mem.WaitSent(t, "memory:c1", 1, wait); got[0].Text != "answered" {
		t.Fatalf("chat c1 got %q", got[0].Text)
	}
}
