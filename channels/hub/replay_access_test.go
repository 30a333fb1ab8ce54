package hub_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// Issue 13, defect 1: Replay decides every inbox item again under the current
// access policy and pairing approvals; it never treats an item as approved.

// leftInInbox persists msg in the inbox the way Handle does, as a previous
// run that died (SIGKILL) or stopped (SIGTERM) before answering would leave it.
func leftInInbox(t *testing.T, st *bolt.Store, msg channels.Message) uint64 {
	t.Helper()
	payload, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	id, dup, err := st.Accept(context.Background(), memory.InboxItem{Channel: msg.Channel, MessageID: msg.MessageID,
		SessionKey: msg.Target().String(), Payload: payload, Received: time.Now()})
	if err != nil || dup {
		t.Fatalf("accept: dup=%v err=%v", dup, err)
	}
	return id
}

func pairingAccess() channels.AccessPolicy {
	return channels.AccessPolicy{Mode: channels.AccessPairing, Groups: channels.GroupsMention}
}

func strangerMsg(id string) channels.Message {
	return channels.Message{Channel: "memory", ChatID: "dm-eve", MessageID: id, Direct: true,
		Sender: channels.Sender{ID: "eve", Name: "Eve"}, Text: "hello, who are you?"}
}

func countCodes(sent []string, code string) int {
	n := 0
	for _, s := range sent {
		if strings.Contains(s, code) {
			n++
		}
	}
	return n
}

// A stranger wrote in pairing mode; the previous run stopped before the
// pairing code reached them: either before the code was even created, or
// after it was saved but before it was sent. After the restart the model is
// never asked, the code is delivered exactly once (also across a further
// restart), the request stays pending and the inbox is cleared.
func TestReplayStrangerInPairingModeGetsCodeOnceNoModel(t *testing.T) {
	for _, tc := range []struct {
		name        string
		codeCreated bool
	}{
		{"killed before the code was created", false},
		{"killed after the code was saved, before it was sent", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			llm := fakellm.Start(t, fakellm.Echo())
			r := newRig(t, llm, pairingAccess())
			ctx := context.Background()
			msg := strangerMsg("m-eve-1")
			id := leftInInbox(t, r.store, msg)
			var code string
			if tc.codeCreated {
				req, created, err := hub.NewPairing(r.store, nil).RequestFrom(ctx, msg, id)
				if err != nil || !created {
					t.Fatalf("request: created=%v err=%v", created, err)
				}
				code = req.Code
			}

			r.restart()
			got := r.ch.WaitSent(t, "memory:dm-eve", 1, wait)
			waitInboxEmpty(t, r.store)
			pending, err := r.h.Pairing().Pending(ctx)
			if err != nil || len(pending) != 1 {
				t.Fatalf("pending pairing requests = %+v, %v; want exactly 1", pending, err)
			}
			if code != "" && pending[0].Code != code {
				t.Fatalf("a second code %q was issued instead of delivering %q", pending[0].Code, code)
			}
			code = pending[0].Code
			if n := countCodes(texts(got), code); n != 1 || !strings.Contains(got[0].Text, "pairing code") {
				t.Fatalf("stranger got %q; want the pairing code %s exactly once", texts(got), code)
			}
			if n := llm.RequestCount(); n != 0 {
				t.Fatalf("the model was asked %d times for an unpaired stranger", n)
			}

			// Another restart sends nothing more: the code went out once.
			r.restart()
			r.say("dm-eve", "eve", "still there?")
			time.Sleep(30 * time.Millisecond) // let the queued message be processed
			if s := r.ch.Sent("memory:dm-eve"); len(s) != 0 {
				t.Fatalf("after a second restart the stranger got %q", texts(s))
			}
			if n := llm.RequestCount(); n != 0 {
				t.Fatalf("the model was asked %d times for an unpaired stranger", n)
			}
			waitInboxEmpty(t, r.store)
		})
	}
}

// A code that was delivered before the restart (the outbox says so) is not
// sent again when its item is replayed.
func TestReplayPairingCodeAlreadyDeliveredIsNotResent(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	r := newRig(t, llm, pairingAccess())
	r.say("dm-eve", "eve", "hello?")
	r.ch.WaitSent(t, "memory:dm-eve", 1, wait)
	waitInboxEmpty(t, r.store)
	pending, err := r.h.Pairing().Pending(context.Background())
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending = %+v, %v", pending, err)
	}
	// The process died after the send, before the inbox item was cleared:
	// put the item back as it was.
	msg := strangerMsg("m-eve-again")
	id := leftInInbox(t, r.store, msg)
	req := pending[0]
	req.Source = id
	raw, _ := json.Marshal([]hub.PairingRequest{req})
	if err := r.store.KVPut(context.Background(), "pairing/pending", raw); err != nil {
		t.Fatal(err)
	}
	// Its reply was recorded as delivered under the item's turn id.
	text := r.ch.Sent("memory:dm-eve")[0].Text
	rec, err := r.store.OutboxIntent(context.Background(), memory.OutboxRecord{Target: "memory:dm-eve",
		TurnID: "in-" + itoa(id), Chunk: 0, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.store.OutboxResult(context.Background(), rec, memory.OutboxDelivered, "p-1", ""); err != nil {
		t.Fatal(err)
	}
	r.restart()
	waitInboxEmpty(t, r.store)
	time.Sleep(20 * time.Millisecond)
	if s := r.ch.Sent("memory:dm-eve"); len(s) != 0 {
		t.Fatalf("the code was sent again after the restart: %q", texts(s))
	}
	if n := llm.RequestCount(); n != 0 {
		t.Fatalf("model asked %d times", n)
	}
}

// A user removed from allow_from before the restart is not answered: no model
// call, no delivery (not even an answer committed before the restart), and
// the inbox items are cleared. In pairing mode the same holds for a user who
// is neither listed nor paired in a group chat.
func TestReplayUserRemovedFromAllowFromIsNotAnswered(t *testing.T) {
	for _, tc := range []struct {
		name      string
		committed bool // the turn was committed, only delivery was left
	}{
		{"turn not run yet", false},
		{"turn committed, not delivered", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			llm := fakellm.Start(t, fakellm.Echo())
			allow := channels.AccessPolicy{Mode: channels.AccessAllowlist, AllowFrom: []string{"memory:user:ann", "memory:user:bob"}}
			r := newRig(t, llm, allow)
			ctx := context.Background()
			msg := channels.Message{Channel: "memory", ChatID: "dm-ann", MessageID: "m-ann-1", Direct: true,
				Sender: channels.Sender{ID: "ann", Name: "Ann"}, Text: "secret question"}
			id := leftInInbox(t, r.store, msg)
			if tc.committed {
				turn := memory.Turn{ID: "in-" + itoa(id), Sources: []uint64{id}, Answer: "secret answer",
					Messages: []memory.Message{{Role: memory.RoleUser, Content: msg.Text}, {Role: memory.RoleAssistant, Content: "secret answer"}}}
				if err := r.store.AppendTurn(ctx, msg.Target().String(), turn); err != nil {
					t.Fatal(err)
				}
			}
			bobMsg := channels.Message{Channel: "memory", ChatID: "dm-bob", MessageID: "m-bob-1", Direct: true,
				Sender: channels.Sender{ID: "bob", Name: "Bob"}, Text: "hi"}
			leftInInbox(t, r.store, bobMsg)

			r.access = channels.AccessPolicy{Mode: channels.AccessAllowlist, AllowFrom: []string{"memory:user:bob"}}
			r.restart()
			r.ch.WaitSent(t, "memory:dm-bob", 1, wait) // bob is still allowed
			waitInboxEmpty(t, r.store)
			if s := r.ch.Sent("memory:dm-ann"); len(s) != 0 {
				t.Fatalf("removed user got %q", texts(s))
			}
			for _, req := range llm.Requests() {
				if strings.Contains(req.LastUserText(), "secret question") {
					t.Fatalf("the model saw the removed user's message")
				}
			}
			if st := r.h.Stats(); st.Denied != 1 {
				t.Fatalf("denied = %d, want 1", st.Denied)
			}
		})
	}
}

func itoa(v uint64) string {
	b, _ := json.Marshal(v)
	return string(b)
}
