package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

func TestWebhookMode(t *testing.T) {
	fake := faketelegram.New(t, faketelegram.Options{})
	logs := &syncBuffer{}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	opts := testOptions(fake, logs)
	opts.Mode = ModeWebhook
	opts.WebhookURL = srv.URL + WebhookPath
	opts.WebhookSecret = "s3cret-Value_1"
	ch, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if ch.WebhookPattern() != "POST /webhooks/telegram" {
		t.Fatalf("pattern %q", ch.WebhookPattern())
	}
	mux.Handle(ch.WebhookPattern(), ch.WebhookHandler())

	rec := newRecorder()
	failNext := make(chan struct{}, 1)
	rec.fail = func(int, channels.Message) error {
		select {
		case <-failNext:
			return errors.New("inbox unavailable")
		default:
			return nil
		}
	}

	// Before Run the handler refuses work so Telegram retries later.
	ctx := context.Background()
	early := fake.NewMessage(42, "too early")
	if code, err := fake.PostWebhook(ctx, opts.WebhookURL, opts.WebhookSecret, faketelegram.Update{Message: &early}); err != nil || code != http.StatusServiceUnavailable {
		t.Errorf("before Run: %d %v", code, err)
	}

	stop := startRun(t, ch, rec.sink())
	defer stop()
	url, secret := fake.WaitWebhook(t, waitLong)
	if url != opts.WebhookURL || secret != opts.WebhookSecret {
		t.Fatalf("setWebhook(%q, %q)", url, secret)
	}
	waitReady(t, ch)
	if len(fake.Requests("getUpdates")) != 0 {
		t.Error("webhook mode must not poll")
	}

	good := fake.NewMessage(42, "via webhook")
	if code, err := fake.DeliverWebhook(ctx, faketelegram.Update{Message: &good}); err != nil || code != http.StatusOK {
		t.Fatalf("valid delivery: %d %v", code, err)
	}
	if m := rec.wait(t, 1)[0]; m.Text != "via webhook" || m.MessageID != fmt.Sprintf("42:%d", good.MessageID) {
		t.Errorf("got %+v", m)
	}

	bad := fake.NewMessage(42, "forged")
	for _, s := range []string{"wrong-secret", ""} {
		code, err := fake.PostWebhook(ctx, opts.WebhookURL, s, faketelegram.Update{Message: &bad})
		if err != nil || code != http.StatusUnauthorized {
			t.Errorf("secret %q: %d %v, want 401", s, code, err)
		}
	}

	// Handle fails → 500 → Telegram redelivers the same update → same MessageID.
	again := fake.NewMessage(42, "retry me")
	failNext <- struct{}{}
	upd := faketelegram.Update{UpdateID: 5001, Message: &again}
	if code, _ := fake.DeliverWebhook(ctx, upd); code != http.StatusInternalServerError {
		t.Errorf("failing sink answered %d, want 500", code)
	}
	if code, _ := fake.DeliverWebhook(ctx, upd); code != http.StatusOK {
		t.Errorf("redelivery answered %d", code)
	}
	got := rec.wait(t, 3)
	if len(got) != 3 || got[1].MessageID != got[2].MessageID || got[2].Text != "retry me" {
		t.Errorf("sink saw %+v", got)
	}
	for _, m := range got {
		if m.Text == "forged" {
			t.Error("a forged update reached the sink")
		}
	}
	if strings.Contains(logs.String(), opts.WebhookSecret) {
		t.Error("webhook secret logged")
	}
}
