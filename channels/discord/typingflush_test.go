package discord

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
)

// Stopping typing lets a typing call already on its way finish before it
// returns, so the answer sent next reaches Discord after it. Cut off on our
// side, the call could still arrive after the answer and show "typing…"
// under it for ten seconds (as Telegram's did, TestAttackTelegramFirstShow).
func TestStopTypingLetsTheCallInFlightLandFirst(t *testing.T) {
	var (
		mu    sync.Mutex
		order []string // what the fake answered, in order
	)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	fake := fakediscord.Start(t, fakediscord.Options{Token: testToken, Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			typing := strings.HasSuffix(r.URL.Path, "/typing")
			if typing {
				entered <- struct{}{}
				<-release
			}
			next.ServeHTTP(w, r)
			if typing || strings.HasSuffix(r.URL.Path, "/messages") && r.Method == http.MethodPost {
				mu.Lock()
				order = append(order, r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:])
				mu.Unlock()
			}
		})
	}})
	fake.AddChannel(guildID, chanID, "general")
	waiting := make(chan struct{}, 1) // stop waits for the call in flight
	ch, _ := newChannel(t, fake, func(o *Options) {
		o.TypingDelay = -1 // at once
		o.TypingInterval = time.Hour
		o.After = func(d time.Duration) <-chan time.Time {
			if d == typingFlush {
				waiting <- struct{}{}
			}
			return make(chan time.Time) // never: the call decides
		}
	})
	target := channels.Target{Channel: "discord", ChatID: chanID}
	stop := ch.StartTyping(context.Background(), target)
	<-entered // the call is on its way
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-waiting:
	case <-stopped:
		t.Error("stop returned while a typing call was in flight")
	}
	close(release)
	<-stopped
	if _, err := ch.Send(context.Background(), channels.Outgoing{Target: target, Text: "the answer"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 2 || order[0] != "typing" || order[1] != "messages" {
		t.Errorf("Discord saw %v, want typing before the message", order)
	}
}
