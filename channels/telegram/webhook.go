package telegram

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/go-telegram/bot"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/redact"
)

// maxWebhookBody bounds one webhook delivery; updates are a few KiB.
const maxWebhookBody = 1 << 20

// WebhookPattern is "POST /webhooks/telegram" in webhook mode and "" in
// polling mode (nothing to mount).
func (c *Adapter) WebhookPattern() string {
	if c.opts.Mode != ModeWebhook {
		return ""
	}
	return "POST " + WebhookPath
}

// WebhookHandler receives Telegram's webhook deliveries. A wrong or missing
// X-Telegram-Bot-Api-Secret-Token answers 401 and nothing is processed. The
// update is handed to the sink synchronously (deliveries are serialized, so
// the sink sees them in arrival order) and the answer is 200 only once
// sink.Handle returned nil; otherwise 500 (or 503 before Run set the webhook)
// makes Telegram deliver it again. An update the adapter cannot decode is
// answered 200 and logged as skipped, as getUpdates confirms it: delivered
// again, it would fail the same way.
func (c *Adapter) WebhookHandler() http.Handler {
	return http.HandlerFunc(c.serveWebhook)
}

func (c *Adapter) serveWebhook(w http.ResponseWriter, r *http.Request) {
	if c.opts.Mode != ModeWebhook {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	got := r.Header.Get("X-Telegram-Bot-Api-Secret-Token")
	if subtle.ConstantTimeCompare([]byte(got), []byte(c.opts.WebhookSecret)) != 1 {
		c.log.Warn("webhook request with a wrong or missing secret token rejected", "remote", r.RemoteAddr)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	box := c.sink.Load()
	if box == nil {
		http.Error(w, "not running", http.StatusServiceUnavailable)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	if err != nil {
		http.Error(w, "unreadable body", http.StatusRequestEntityTooLarge)
		return
	}
	var upd update
	if err := json.Unmarshal(body, &upd); err != nil {
		// It came with the secret, so from Telegram: a non-2xx answer
		// would only have it delivered again and again. Confirmed and
		// skipped, as getUpdates does.
		id, _ := updateIDOf(body)
		c.log.Error("undecodable update skipped", "update_id", id, "err", err)
		w.WriteHeader(http.StatusOK)
		return
	}
	c.webhookMu.Lock()
	err = c.dispatch(r.Context(), box.Sink, &upd)
	c.webhookMu.Unlock()
	if err != nil {
		c.log.Warn("webhook update not accepted by the handler; Telegram will retry", "update_id", upd.ID, "err", err)
		http.Error(w, "not accepted", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (c *Adapter) runWebhook(ctx context.Context, sink channels.Sink) error {
	// Accept deliveries from the moment Telegram may send them: it can deliver
	// before our setWebhook call has returned.
	c.sink.Store(&sinkBox{sink})
	cctx, cancel := c.callCtx(ctx)
	_, err := c.bot.SetWebhook(cctx, &bot.SetWebhookParams{
		URL:            c.opts.WebhookURL,
		SecretToken:    c.opts.WebhookSecret,
		AllowedUpdates: allowedUpdates,
	})
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("telegram: setWebhook: %w", c.redact(err))
	}
	c.ready.Store(true)
	c.log.Info("webhook set", "url", redact.URL(c.opts.WebhookURL))
	<-ctx.Done()
	return nil
}
