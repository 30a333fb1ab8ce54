package telegram

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

func TestPrivateChatRoundTrip(t *testing.T) {
	r := newRig(t, nil)
	sent := r.fake.UserSays(42, "hello there")

	got := r.rec.wait(t, 1)[0]
	want := channels.Message{
		Channel:   "telegram",
		ChatID:    "42",
		MessageID: fmt.Sprintf("42:%d", sent.MessageID),
		Sender:    channels.Sender{ID: "42", Name: "User"},
		Text:      "hello there",
		Direct:    true,
		Time:      time.Unix(sent.Date, 0).UTC(),
	}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Fatalf("normalized message\n got %+v\nwant %+v", got, want)
	}
	if got.Target().String() != "telegram:42" {
		t.Errorf("target = %s", got.Target())
	}

	id, err := r.ch.Send(context.Background(), channels.Outgoing{
		Target: got.Target(), Text: "<b>Hi</b> &amp; welcome", Plain: "Hi & welcome", ReplyTo: got.MessageID,
	})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	msgs := r.fake.WaitSent(t, 42, 1, waitLong)
	if id != fmt.Sprintf("42:%d", msgs[0].MessageID) {
		t.Errorf("Send returned %q, fake has message %d", id, msgs[0].MessageID)
	}
	if msgs[0].Plain != "Hi & welcome" || msgs[0].ParseMode != "HTML" || msgs[0].Text != "<b>Hi</b> &amp; welcome" {
		t.Errorf("user sees %+v", msgs[0])
	}
	if msgs[0].ReplyToMessageID != 0 {
		t.Errorf("private answers are not quote-replies, got reply to %d", msgs[0].ReplyToMessageID)
	}

	// Start-up: webhook removed before polling, command menu registered.
	if n := len(r.fake.Requests("deleteWebhook")); n != 1 {
		t.Errorf("deleteWebhook calls = %d, want 1", n)
	}
	var names []string
	for _, c := range r.fake.Commands() {
		names = append(names, c.Command)
	}
	if strings.Join(names, ",") != "help,reset,stop,status,persona" {
		t.Errorf("registered commands = %v", names)
	}
	r.fake.WaitConfirmed(t, 1001, waitLong)
}

func TestBadTokenStopsRun(t *testing.T) {
	fake := faketelegram.New(t, faketelegram.Options{})
	opts := testOptions(fake, &syncBuffer{})
	opts.Token = "999:WRONG-secret-token"
	ch, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	err = ch.Run(context.Background(), newRecorder().sink())
	if err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("Run = %v, want an Unauthorized error", err)
	}
	if strings.Contains(err.Error(), opts.Token) || strings.Contains(fmt.Sprint(ch), opts.Token) {
		t.Errorf("token leaked: %v / %v", err, ch)
	}
}

func TestRunTwiceRefused(t *testing.T) {
	r := newRig(t, nil)
	r.fake.WaitRequests(t, "getUpdates", 1, waitLong)
	if err := r.ch.Run(context.Background(), newRecorder().sink()); err == nil {
		t.Error("a second concurrent Run was accepted")
	}
}

func TestNewValidation(t *testing.T) {
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"no token", Options{}, "token is required"},
		{"bad mode", Options{Token: "1:a", Mode: "push"}, "unknown mode"},
		{"bad api url", Options{Token: "1:a", APIURL: "ftp://x"}, "api_url"},
		{"webhook without url", Options{Token: "1:a", Mode: ModeWebhook, WebhookSecret: "abc"}, "webhook_url"},
		{"webhook without secret", Options{Token: "1:a", Mode: ModeWebhook, WebhookURL: "https://x/y"}, "webhook_secret"},
		{"webhook secret charset", Options{Token: "1:a", Mode: ModeWebhook, WebhookURL: "https://x/y", WebhookSecret: "no spaces!"}, "webhook_secret"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want error about %q", err, tc.want)
			}
		})
	}
	ch, err := New(Options{Token: "1:a", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Name() != "telegram" || ch.WebhookPattern() != "" || ch.Ready() {
		t.Errorf("polling channel: name %q pattern %q ready %v", ch.Name(), ch.WebhookPattern(), ch.Ready())
	}
}

func TestOptionsNeverShowSecrets(t *testing.T) {
	o := Options{Token: "42:SECRET-token", WebhookSecret: "hook-SECRET", APIURL: "http://127.0.0.1:1"}
	var logs syncBuffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "telegram", o)
	for _, out := range []string{fmt.Sprint(o), fmt.Sprintf("%+v", o), fmt.Sprintf("%v", &o), logs.String()} {
		if strings.Contains(out, "SECRET") {
			t.Errorf("secret shown: %s", out)
		}
	}
}
