package hub_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// Issue 14 item 5: a turn canceled at shutdown is replayed at the next start
// after a plain shutdown (SIGTERM), but not when the operator canceled it
// (Ctrl-C): then its message is cleared from the inbox.
func TestOperatorCancelIsNotReplayed(t *testing.T) {
	for _, tt := range []struct {
		name        string
		operator    bool
		wantPending int
	}{
		{"shutdown leaves it for replay", false, 1},
		{"operator cancel clears it", true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			llm := fakellm.Start(t, func(*fakellm.Request) fakellm.Response {
				return fakellm.Response{Content: "slow", Delay: time.Minute}
			})
			r := newRig(t, llm, openAccess())
			r.say("c1", "ann", "a long question")
			deadline := time.Now().Add(wait)
			for llm.RequestCount() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the turn never reached the model")
				}
				time.Sleep(5 * time.Millisecond)
			}
			if tt.operator {
				r.h.OperatorCancel(false) // takes effect when the grace ends
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond) // the grace period
			defer cancel()
			r.h.Close(ctx)
			pending, err := r.store.InboxPending(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(pending) != tt.wantPending {
				t.Fatalf("%d inbox items pending after shutdown, want %d", len(pending), tt.wantPending)
			}
			if sent := r.ch.Sent("memory:c1"); len(sent) != 0 {
				t.Fatalf("something was delivered: %v", sent)
			}
		})
	}
}

// A second Ctrl-C (OperatorCancel(true)) cancels a running turn at once,
// before any grace period ends, and clears its message.
func TestOperatorCancelNow(t *testing.T) {
	llm := fakellm.Start(t, func(*fakellm.Request) fakellm.Response {
		return fakellm.Response{Content: "slow", Delay: time.Minute}
	})
	r := newRig(t, llm, openAccess())
	r.say("c1", "ann", "a long question")
	deadline := time.Now().Add(wait)
	for llm.RequestCount() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the turn never reached the model")
		}
		time.Sleep(5 * time.Millisecond)
	}
	done := make(chan struct{})
	go func() { r.h.Close(context.Background()); close(done) }() // no grace deadline at all
	r.h.OperatorCancel(true)
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("Close did not return after OperatorCancel(true)")
	}
	pending, err := r.store.InboxPending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 0 {
		t.Fatalf("%d inbox items pending, want 0", len(pending))
	}
}
