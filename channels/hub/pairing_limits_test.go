package hub_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// mapKV is an in-memory hub.KV.
type mapKV struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (k *mapKV) KVGet(_ context.Context, key string) ([]byte, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[key]
	return v, ok, nil
}

func (k *mapKV) KVPut(_ context.Context, key string, val []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string][]byte{}
	}
	k.m[key] = append([]byte(nil), val...)
	return nil
}

func (k *mapKV) KVDelete(_ context.Context, key string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, key)
	return nil
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func stranger(i int) channels.Message {
	id := fmt.Sprintf("u%d", i)
	return channels.Message{Channel: "telegram", ChatID: id, Sender: channels.Sender{ID: id}, Direct: true}
}

// The cap is per user with a global bound that drops the oldest codes first
// (issue 13, defect 10): it used to be three per channel, then silence for an hour.
func TestPairingCapPerUserWithGlobalBound(t *testing.T) {
	ctx := context.Background()
	clk := &fakeClock{t: time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)}
	p := hub.NewPairing(&mapKV{}, clk.now)

	codes := map[string]bool{}
	for i := range hub.PairingMaxPending {
		req, created, err := p.Request(ctx, stranger(i))
		if err != nil || !created {
			t.Fatalf("stranger %d: created %v, err %v", i, created, err)
		}
		codes[req.Code] = true
		clk.add(time.Second)
	}
	if len(codes) != hub.PairingMaxPending {
		t.Fatalf("%d distinct codes", len(codes))
	}
	// One pending code per user: asking again returns the same one.
	again, created, err := p.Request(ctx, stranger(7))
	if err != nil || created || !codes[again.Code] {
		t.Fatalf("second request of a user: %+v created %v err %v", again, created, err)
	}
	// Full, and every code is younger than PairingMinAge: refused.
	if _, _, err := p.Request(ctx, stranger(1000)); err != hub.ErrPairingFull {
		t.Fatalf("full: err %v, want ErrPairingFull", err)
	}
	// Once the oldest codes are old enough they make room, oldest first.
	clk.add(hub.PairingMinAge - time.Duration(hub.PairingMaxPending)*time.Second + time.Second)
	for _, i := range []int{1000, 1001} {
		if _, created, err := p.Request(ctx, stranger(i)); err != nil || !created {
			t.Fatalf("stranger %d after the oldest aged: created %v err %v", i, created, err)
		}
	}
	if _, _, err := p.Request(ctx, stranger(1002)); err != hub.ErrPairingFull {
		t.Fatalf("third newcomer: err %v, want ErrPairingFull (only two codes were old enough)", err)
	}
	pending, err := p.Pending(ctx)
	if err != nil || len(pending) != hub.PairingMaxPending {
		t.Fatalf("pending %d, %v", len(pending), err)
	}
	left := map[string]bool{}
	for _, r := range pending {
		left[r.User] = true
	}
	if left["telegram:user:u0"] || left["telegram:user:u1"] || !left["telegram:user:u2"] || !left["telegram:user:u1001"] {
		t.Fatalf("wrong codes dropped: u0 %v u1 %v u2 %v u1001 %v", left["telegram:user:u0"],
			left["telegram:user:u1"], left["telegram:user:u2"], left["telegram:user:u1001"])
	}
}

func TestPairingRefusalRepliesRateLimited(t *testing.T) {
	clk := &fakeClock{t: time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)}
	p := hub.NewPairing(&mapKV{}, clk.now)
	if !p.ShouldTellRefused("telegram:user:a") {
		t.Fatal("first refusal not told")
	}
	if p.ShouldTellRefused("telegram:user:a") {
		t.Fatal("the same stranger was told twice")
	}
	told := 1
	for i := range 50 {
		if p.ShouldTellRefused(fmt.Sprintf("telegram:user:b%d", i)) {
			told++
		}
	}
	if told != 10 {
		t.Fatalf("%d refusal replies within a minute, want 10", told)
	}
	clk.add(time.Minute)
	if !p.ShouldTellRefused("telegram:user:c") || p.ShouldTellRefused("telegram:user:a") {
		t.Fatal("after a minute: a new stranger is told again, a recent one is not")
	}
	clk.add(hub.PairingMinAge)
	if !p.ShouldTellRefused("telegram:user:a") {
		t.Fatal("after PairingMinAge the stranger may be told again")
	}
}

// Many strangers on one channel each get their code; when the global bound
// is reached, a new stranger is told to try later, once.
func TestManyStrangersOnOneChannelGetCodes(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	r := newRig(t, llm, pairingAccess())
	for i := range 6 {
		user := fmt.Sprintf("s%d", i)
		r.say("dm-"+user, user, "hello?")
		got := r.ch.WaitSent(t, "memory:dm-"+user, 1, wait)
		if !strings.Contains(got[0].Text, "pairing code") {
			t.Fatalf("stranger %d got %q, want a pairing code", i, got[0].Text)
		}
	}
	// Fill the global bound with fresh codes.
	ctx := context.Background()
	for i := 6; i < hub.PairingMaxPending; i++ {
		if _, _, err := r.h.Pairing().Request(ctx, channels.Message{Channel: "memory", ChatID: fmt.Sprintf("x%d", i),
			Sender: channels.Sender{ID: fmt.Sprintf("x%d", i)}, Direct: true}); err != nil {
			t.Fatal(err)
		}
	}
	r.say("dm-late", "late", "hello?")
	got := r.ch.WaitSent(t, "memory:dm-late", 1, wait)
	if !strings.Contains(got[0].Text, "try again later") || strings.Contains(got[0].Text, "pairing code") {
		t.Fatalf("refused stranger got %q", got[0].Text)
	}
	r.say("dm-late", "late", "hello??")
	waitInboxEmpty(t, r.store) // the second message was handled
	if s := r.ch.Sent("memory:dm-late"); len(s) != 1 {
		t.Fatalf("refused stranger told %d times: %q", len(s), texts(s))
	}
	if n := llm.RequestCount(); n != 0 {
		t.Fatalf("the model saw %d requests from strangers", n)
	}
}
