package matrix

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakematrix"
)

const sinceKey = "matrix/since/" + fakematrix.DefaultUserID

// The since token is stored only after the sink accepted the batch: a
// refused event is fetched again (nothing lost), and a restart from the
// stored token neither repeats what was accepted nor loses what was said
// while the adapter was down.
func TestSinceTokenAfterAccept(t *testing.T) {
	fake := newFake(t, fakematrix.Options{})
	kv := newMemKV()
	a, err := New(testOptions(fake, kv, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	var refusals atomic.Int32
	rec.refuse = func(m channels.Message) error {
		if m.Text == "refused once" && refusals.Add(1) == 1 {
			return errors.New("inbox write failed")
		}
		return nil
	}
	stop := running(t, a, rec)
	first := kv.get(sinceKey)
	if first == "" {
		t.Fatal("the first start stored no since token")
	}
	fake.UserSays(dmRoom, alice, "refused once")
	waitMsgs(t, fake, rec, "refused once")
	fake.UserSays(dmRoom, alice, "accepted")
	waitMsgs(t, fake, rec, "accepted")
	fake.WaitFor(t, waitLong, "the since token to move past the accepted batch", func() bool { return kv.get(sinceKey) != first })
	stop()

	fake.UserSays(dmRoom, alice, "while down")
	b, err := New(testOptions(fake, kv, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	rec2 := newRecorder()
	running(t, b, rec2)
	fake.UserSays(dmRoom, alice, "after restart")
	msgs := waitMsgs(t, fake, rec2, "after restart")
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Text)
	}
	if got := strings.Join(texts, "|"); got != "while down|after restart" {
		t.Errorf("after the restart the sink got %q, want while down|after restart (nothing repeated, nothing lost)", got)
	}
	if n := len(withText(rec.all(), "refused once")); n != 1 || refusals.Load() < 2 {
		t.Errorf("the refused event was accepted %d times after %d attempts; want once, after a second delivery", n, refusals.Load())
	}
}

// First start: the rooms' earlier messages are not answered.
func TestFirstStartSkipsBacklog(t *testing.T) {
	fake := newFake(t, fakematrix.Options{})
	fake.UserSays(dmRoom, alice, "old question")
	a, err := New(testOptions(fake, newMemKV(), &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	running(t, a, rec)
	fake.UserSays(dmRoom, alice, "new question")
	msgs := waitMsgs(t, fake, rec, "new question")
	if len(msgs) != 1 {
		t.Errorf("the sink got %d messages, want only the new one: %+v", len(msgs), msgs)
	}
}

// More events than one sync's timeline holds while the adapter was down:
// the gap is read with /messages, every message arrives once, in order.
func TestLimitedTimelineGapFilled(t *testing.T) {
	fake := newFake(t, fakematrix.Options{TimelineLimit: 3})
	kv := newMemKV()
	a, err := New(testOptions(fake, kv, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	stop := running(t, a, newRecorder())
	stop()
	var want []string
	for i := range 12 {
		want = append(want, fmt.Sprintf("message %d", i))
		fake.UserSays(dmRoom, alice, want[i])
	}
	b, err := New(testOptions(fake, kv, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	running(t, b, rec)
	msgs := waitMsgs(t, fake, rec, "message 11")
	var got []string
	for _, m := range msgs {
		got = append(got, m.Text)
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("after a limited sync the sink got\n%q\nwant\n%q", got, want)
	}
	if len(fake.Requests("/messages")) == 0 {
		t.Error("the gap was not read with /messages")
	}
}

// A rejected token ends Run with an error that says so, without the token.
func TestRejectedToken(t *testing.T) {
	fake := newFake(t, fakematrix.Options{})
	opts := testOptions(fake, nil, &syncBuffer{})
	opts.AccessToken = "syt_wrong_token_value_123"
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	err = a.Run(context.Background(), newRecorder())
	if err == nil || !strings.Contains(err.Error(), "rejected the access token") || strings.Contains(err.Error(), opts.AccessToken) {
		t.Errorf("Run = %v; want the token rejected, without the token", err)
	}
	// A token of another account than user_id is refused too.
	opts.AccessToken = fake.Token()
	opts.UserID = "@other:fake.test"
	b, _ := New(opts)
	if err := b.Run(context.Background(), newRecorder()); err == nil || !strings.Contains(err.Error(), "not to channels.matrix.user_id @other:fake.test") {
		t.Errorf("Run with another user id = %v", err)
	}
}

// Attack: an event flood while the adapter was down (far more than one
// sync holds) with the handler refusing some events (busy): every message
// is accepted exactly once under its own id, in order per room.
func TestEventFlood(t *testing.T) {
	fake := newFake(t, fakematrix.Options{TimelineLimit: 20})
	kv := newMemKV()
	a, err := New(testOptions(fake, kv, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	stop := running(t, a, newRecorder())
	stop()
	const n = 300
	for i := range n {
		fake.UserSays(dmRoom, alice, fmt.Sprintf("flood %03d", i))
	}
	rec := newRecorder()
	refused := map[string]bool{}
	rec.refuse = func(m channels.Message) error {
		if strings.HasSuffix(m.Text, "0") && strings.Contains(m.Text, "5") && !refused[m.Text] { // a few, once each
			refused[m.Text] = true
			return errors.New("busy")
		}
		return nil
	}
	b, err := New(testOptions(fake, kv, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	running(t, b, rec)
	msgs := waitMsgs(t, fake, rec, fmt.Sprintf("flood %03d", n-1))
	ids := map[string]string{}
	var order []string
	for _, m := range msgs {
		if prev, ok := ids[m.Text]; ok {
			if prev != m.MessageID {
				t.Fatalf("%q arrived under two ids", m.Text)
			}
			continue
		}
		ids[m.Text] = m.MessageID
		order = append(order, m.Text)
	}
	if len(order) != n {
		t.Fatalf("%d distinct messages, want %d", len(order), n)
	}
	for i, text := range order {
		if want := fmt.Sprintf("flood %03d", i); text != want {
			t.Fatalf("message %d is %q, want %q", i, text, want)
		}
	}
	if len(refused) == 0 {
		t.Error("nothing was refused: the test did not exercise the retry")
	}
}

// A stored since token the homeserver refuses (a reset server, a token of
// another server) does not wedge the adapter: it says so and syncs on
// from now.
func TestRefusedSinceToken(t *testing.T) {
	fake := newFake(t, fakematrix.Options{})
	kv := newMemKV()
	_ = kv.KVPut(context.Background(), sinceKey, []byte("garbage-token"))
	logs := &syncBuffer{}
	a, err := New(testOptions(fake, kv, logs))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	running(t, a, rec)
	fake.UserSays(dmRoom, alice, "are you alive?")
	waitMsgs(t, fake, rec, "are you alive?")
	if !strings.Contains(logs.String(), "rejected the stored sync position") {
		t.Errorf("no error logged about the refused token:\n%s", logs.String())
	}
	if got := kv.get(sinceKey); got == "garbage-token" {
		t.Error("the refused token is still stored")
	}
}
