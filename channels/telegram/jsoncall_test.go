package telegram

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// TestAnswerCallsAreOneJSONBody: the calls every answer makes (sendMessage,
// sendMessageDraft, sendChatAction, editMessageText) go out as one JSON body
// of known length. Through the library they were multipart forms streamed
// from a goroutine through a pipe in chunked encoding — a dozen small writes
// and a reflection walk a call, the largest share of the Telegram path's CPU
// after the store. The answers still arrive as the user sees them.
func TestAnswerCallsAreOneJSONBody(t *testing.T) {
	type seen struct {
		contentType string
		length      int64
	}
	var mu sync.Mutex
	got := map[string][]seen{}
	fake := faketelegram.New(t, faketelegram.Options{Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			method := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
			mu.Lock()
			got[method] = append(got[method], seen{r.Header.Get("Content-Type"), r.ContentLength})
			mu.Unlock()
			next.ServeHTTP(w, r)
		})
	}})
	fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
	ch, err := New(testOptions(fake, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	target := channels.Target{Channel: "telegram", ChatID: "42"}
	stop := ch.StartTyping(ctx, target)
	fake.WaitRequests(t, "sendChatAction", 1, waitLong)
	stop()
	if err := ch.Preview(ctx, target, 3, "Thinking <b>hard</b>"); err != nil {
		t.Fatalf("Preview: %v", err)
	}
	id, err := ch.Send(ctx, channels.Outgoing{Target: target, Text: "Hello <b>there</b> &amp; welcome"})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if err := ch.Edit(ctx, target, id, "Hello <i>again</i>"); err != nil {
		t.Fatalf("Edit: %v", err)
	}
	sent := fake.Sent(42)
	if len(sent) != 1 || sent[0].Plain != "Hello again" || id != "42:"+strconv.Itoa(sent[0].MessageID) {
		t.Fatalf("chat shows %+v (id %q); want one message reading \"Hello again\"", sent, id)
	}
	if d := fake.Drafts(42); len(d) != 1 || d[0].Plain != "Thinking hard" {
		t.Fatalf("previews shown: %+v", d)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, m := range []string{"sendChatAction", "sendMessageDraft", "sendMessage", "editMessageText"} {
		if len(got[m]) == 0 {
			t.Errorf("%s not called", m)
		}
		for _, s := range got[m] {
			if s.contentType != "application/json" || s.length <= 0 {
				t.Errorf("%s went out as %q with length %d; want application/json of known length", m, s.contentType, s.length)
			}
		}
	}
}

// TestConnectionsReusedUnderConcurrentAnswers: answers to many chats at once
// reuse their connections to the Bot API. Go's default client keeps two idle
// connections a host, so with 20 chats answered at once ~18 connections were
// closed after every round and dialed again (a tenth of the daemon's CPU on
// the Telegram load run went to dialing and to the goroutines of new
// connections).
func TestConnectionsReusedUnderConcurrentAnswers(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]bool{}
	fake := faketelegram.New(t, faketelegram.Options{Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			conns[r.RemoteAddr] = true
			mu.Unlock()
			next.ServeHTTP(w, r)
		})
	}})
	const chats, rounds = 20, 4
	for i := range chats {
		fake.AddChat(faketelegram.Chat{ID: int64(100 + i), Type: "private"})
	}
	ch, err := New(testOptions(fake, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	for round := range rounds {
		var wg sync.WaitGroup
		for i := range chats {
			wg.Go(func() {
				target := channels.Target{Channel: "telegram", ChatID: strconv.Itoa(100 + i)}
				if _, err := ch.Send(context.Background(), channels.Outgoing{Target: target, Text: "answer " + strconv.Itoa(round)}); err != nil {
					t.Errorf("Send: %v", err)
				}
			})
		}
		wg.Wait()
	}
	for i := range chats {
		if n := len(fake.Sent(int64(100 + i))); n != rounds {
			t.Errorf("chat %d got %d answers, want %d", 100+i, n, rounds)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// Kept and reused: about one connection per concurrent answer. A few
	// more may be dialed when a round starts before the last answers'
	// connections are back in the pool (the transport returns them from
	// its own goroutine after the body was read: 21 was seen on a loaded
	// machine); without reuse each round dialed ~18 anew (74 in all).
	if len(conns) >= chats*rounds/2 {
		t.Errorf("%d answers to %d chats at a time opened %d connections; want well under %d (kept and reused)",
			chats*rounds, chats, len(conns), chats*rounds/2)
	}
}
