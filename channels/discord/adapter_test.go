package discord

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
)

func TestDMRoundTrip(t *testing.T) {
	t.Parallel()
	h := start(t, fakediscord.Options{}, nil)

	in := h.fake.UserSays(dmID, userID, "hello bot", fakediscord.SayOptions{AuthorName: "alice"})
	got := h.sink.wait(t, 1)[0]
	want := channels.Message{
		Channel: "discord", ChatID: dmID, MessageID: in.ID, Text: "hello bot", Direct: true,
		Sender: channels.Sender{ID: userID, Name: "alice"},
	}
	got.Time = time.Time{}
	if got.Channel != want.Channel || got.ChatID != want.ChatID || got.MessageID != want.MessageID ||
		got.Text != want.Text || got.Direct != want.Direct || got.Sender != want.Sender || got.ThreadID != "" || got.Mentioned {
		t.Fatalf("message = %+v, want %+v", got, want)
	}

	id, err := h.ch.Send(context.Background(), channels.Outgoing{
		Target: got.Target(), Text: "hi **alice**", ReplyTo: in.ID, Nonce: "turn1-0",
	})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	sent := h.fake.WaitSent(t, dmID, 1, wait)
	if sent[0].ID != id || sent[0].Content != "hi **alice**" {
		t.Fatalf("fake has %+v; Send returned id %s", sent[0], id)
	}
	req := h.fake.MessageRequests()[0]
	if req.MessageReference != nil {
		t.Errorf("DM reply carried a message_reference: %+v", req.MessageReference)
	}
	if req.Nonce != "turn1-0" || !req.EnforceNonce {
		t.Errorf("nonce = %q enforce = %v, want turn1-0 with enforce_nonce", req.Nonce, req.EnforceNonce)
	}

	ident := h.fake.Identifies()[0]
	if ident.Intents != int(Intents) || ident.Intents&fakediscord.IntentMessageContent == 0 {
		t.Errorf("IDENTIFY intents = %b, want %b", ident.Intents, Intents)
	}
	if ident.Token != "Bot "+testToken {
		t.Errorf("IDENTIFY token is not the bot token")
	}
}

func TestNewValidatesOptions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"no token", Options{}, "token is required"},
		{"api url with path", Options{Token: "x", APIURL: "http://127.0.0.1:1/api/v9"}, "scheme://host"},
		{"api url not http", Options{Token: "x", APIURL: "ftp://h"}, "scheme://host"},
		{"gateway url not ws", Options{Token: "x", GatewayURL: "http://h"}, "ws://"},
	}
	for _, tc := range cases {
		if _, err := New(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	o := Options{Token: testToken}
	if s := o.String(); strings.Contains(s, testToken) {
		t.Errorf("Options.String leaks the token: %s", s)
	}
	ch, err := New(Options{Token: "Bot abc"})
	if err != nil || ch.token != "Bot abc" || ch.Name() != "discord" {
		t.Errorf("New with prefixed token: %v %q", err, ch.token)
	}
	if ch.Ready() {
		t.Errorf("Ready before Run")
	}
}

func TestBadTokenEndsRun(t *testing.T) {
	t.Parallel()
	fake := fakediscord.Start(t, fakediscord.Options{Token: "the-right-one"})
	ch, _ := newChannel(t, fake, nil)
	err := ch.Run(context.Background(), newSink())
	if err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), testToken) {
		t.Fatalf("Run = %v; want a 401 error without the token", err)
	}
}

func TestRunTwiceIsRefused(t *testing.T) {
	t.Parallel()
	h := start(t, fakediscord.Options{}, nil)
	if err := h.ch.Run(context.Background(), newSink()); err == nil || !strings.Contains(err.Error(), "already active") {
		t.Fatalf("second Run = %v", err)
	}
}
