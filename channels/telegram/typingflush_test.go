package telegram

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// Stopping typing lets a sendChatAction call already on its way finish
// before it returns, so the answer sent next reaches Telegram after it.
// Cut off on our side, the call could still reach Telegram after the
// answer and show "typing…" under it for five seconds
// (TestAttackTelegramFirstShow saw it 1.4 ms after the final message).
func TestStopTypingLetsTheCallInFlightLandFirst(t *testing.T) {
	var (
		mu    sync.Mutex
		order []string // what the fake answered, in order
	)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	fake := faketelegram.New(t, faketelegram.Options{Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/bot"+faketelegram.DefaultToken+"/sendChatAction" {
				entered <- struct{}{}
				<-release
			}
			next.ServeHTTP(w, r)
			mu.Lock()
			order = append(order, r.URL.Path[len("/bot"+faketelegram.DefaultToken+"/"):])
			mu.Unlock()
		})
	}})
	fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
	opts := testOptions(fake, &syncBuffer{})
	opts.TypingDelay = -1 // at once
	opts.TypingInterval = time.Hour
	waiting := make(chan struct{}, 1) // stop waits for the call in flight
	opts.After = func(d time.Duration) <-chan time.Time {
		if d == channels.TypingFlush {
			waiting <- struct{}{}
		}
		return make(chan time.Time) // never: the call decides
	}
	ch, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	target := channels.Target{Channel: "telegram", ChatID: "42"}
	stop := ch.StartTyping(context.Background(), target)
	<-entered // the call is on its way
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-waiting:
	case <-stopped:
		t.Error("stop returned while a sendChatAction call was in flight")
	}
	close(release)
	<-stopped
	if _, err := ch.Send(context.Background(), channels.Outgoing{Target: target, Text: "the answer"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 2 || order[0] != "sendChatAction" || order[1] != "sendMessage" {
		t.Errorf("Telegram saw %v, want sendChatAction before sendMessage", order)
	}
}
