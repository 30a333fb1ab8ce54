package telegram

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

func TestHandleErrorMeansRedelivery(t *testing.T) {
	fake := faketelegram.New(t, faketelegram.Options{})
	first := fake.UserSays(42, "one")
	fake.UserSays(42, "two")
	logs := &syncBuffer{}
	ch, err := New(testOptions(fake, logs))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	rec.fail = func(call int, m channels.Message) error {
		if call == 1 {
			return errors.New("inbox write failed")
		}
		return nil
	}
	stop := startRun(t, ch, rec.sink())
	defer stop()

	got := rec.wait(t, 3)
	texts := []string{got[0].Text, got[1].Text, got[2].Text}
	if strings.Join(texts, ",") != "one,one,two" {
		t.Fatalf("sink saw %v; want the failed update again before the next one", texts)
	}
	if got[0].MessageID != got[1].MessageID || got[0].MessageID != fmt.Sprintf("42:%d", first.MessageID) {
		t.Errorf("redelivery changed the MessageID: %q vs %q", got[0].MessageID, got[1].MessageID)
	}
	fake.WaitConfirmed(t, 1002, waitLong)
	if n := fake.Deliveries(1001); n != 2 {
		t.Errorf("update 1001 fetched %d times, want 2", n)
	}
	if n := fake.Deliveries(1002); n < 1 {
		t.Errorf("update 1002 never fetched")
	}
}

func TestSameUpdateTwiceKeepsMessageID(t *testing.T) {
	// The bot stops after the sink accepted an update but before the next
	// getUpdates confirmed it; the restarted bot receives it again. Dedup is
	// the handler's job: the adapter must produce the same MessageID.
	fake := faketelegram.New(t, faketelegram.Options{})
	fake.UserSays(42, "hi")
	logs := &syncBuffer{}
	ch, err := New(testOptions(fake, logs))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	sink := channels.SinkFunc(func(c context.Context, m channels.Message) error {
		err := rec.sink().Handle(c, m)
		once.Do(cancel) // crash right after the inbox write
		return err
	})
	if err := ch.Run(ctx, sink); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if fake.Confirmed(1001) {
		t.Fatal("update confirmed although the bot stopped before the next poll")
	}
	stop := startRun(t, ch, rec.sink())
	defer stop()
	got := rec.wait(t, 2)
	if got[0].MessageID != got[1].MessageID || got[0].MessageID == "" {
		t.Errorf("MessageIDs differ: %q vs %q", got[0].MessageID, got[1].MessageID)
	}
	fake.WaitConfirmed(t, 1001, waitLong)
}

func TestReadinessFollowsPolling(t *testing.T) {
	fake := faketelegram.New(t, faketelegram.Options{})
	fake.FailNext("getUpdates", 3, faketelegram.InternalError())
	fake.UserSays(42, "pending") // the first good poll returns at once
	logs := &syncBuffer{}
	ch, err := New(testOptions(fake, logs))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Ready() {
		t.Fatal("ready before Run")
	}
	stop := startRun(t, ch, newRecorder().sink())
	fake.WaitRequests(t, "getUpdates", 4, waitLong)
	waitReady(t, ch)
	if !strings.Contains(logs.String(), "getUpdates failed") {
		t.Error("poll failures not logged")
	}
	stop()
	if ch.Ready() {
		t.Error("ready after Run returned")
	}
}

func TestRateLimitedPollHonoursRetryAfter(t *testing.T) {
	fake := faketelegram.New(t, faketelegram.Options{})
	fake.FailNext("getUpdates", 1, faketelegram.TooManyRequests(30))
	logs := &syncBuffer{}
	ch, err := New(testOptions(fake, logs))
	if err != nil {
		t.Fatal(err)
	}
	stop := startRun(t, ch, newRecorder().sink())
	defer stop()
	fake.WaitRequests(t, "getUpdates", 1, waitLong)
	deadline := time.Now().Add(waitLong)
	for !strings.Contains(logs.String(), "retry_in=30s") {
		if time.Now().After(deadline) {
			t.Fatalf("no 30s wait logged:\n%s", logs.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
	// RetryMin is 5ms: without honouring retry_after the poller would have
	// called again many times by now.
	time.Sleep(100 * time.Millisecond)
	if n := len(fake.Requests("getUpdates")); n != 1 {
		t.Errorf("getUpdates called %d times during the flood wait", n)
	}
	if ch.Ready() {
		t.Error("ready while rate limited")
	}
	stop() // cancel interrupts the wait
}
