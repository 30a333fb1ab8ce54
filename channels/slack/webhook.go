package slack

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack/slackevents"
	"github.com/switchboard-bot/switchboard/channels"
)

// maxWebhookBody bounds an Events API request body.
const maxWebhookBody = 1 << 20

// runHTTP serves HTTP mode: WebhookHandler hands events to sink while ctx lasts.
func (c *Adapter) runHTTP(ctx context.Context, sink channels.Sink) error {
	c.sinkMu.Lock()
	c.sink = sink
	c.sinkMu.Unlock()
	c.ready.Store(true)
	c.log.Info("slack: receiving events over HTTP", "bot_user", c.BotUserID(), "pattern", c.WebhookPattern())
	<-ctx.Done()
	c.ready.Store(false)
	c.sinkMu.Lock()
	c.sink = nil
	c.sinkMu.Unlock()
	return nil
}

// WebhookPattern is where the daemon mounts WebhookHandler.
// It is empty in Socket Mode, so the daemon mounts nothing.
func (c *Adapter) WebhookPattern() string {
	if c.opts.Mode != ModeHTTP {
		return ""
	}
	return "POST /webhooks/slack/events"
}

// WebhookHandler serves the Events API (HTTP mode). Every request's signature
// is verified first; url_verification is answered with its challenge; an
// event_callback is answered 200 once the sink persisted it (500 if it could
// not, so Slack retries; 503 while Run is not running).
func (c *Adapter) WebhookHandler() http.Handler { return http.HandlerFunc(c.serveEvents) }

func (c *Adapter) serveEvents(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	if err != nil {
		http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	if err := c.verifySignature(r.Header, body); err != nil {
		c.log.Warn("slack: rejected an events request", "reason", err, "remote", r.RemoteAddr)
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return
	}
	ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	if err != nil {
		var outer struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(body, &outer) != nil {
			http.Error(w, "malformed event", http.StatusBadRequest)
			return
		}
		// A well-formed callback with an inner event slack-go does not know:
		// nothing to do, and a non-2xx answer would only make Slack retry.
		c.log.Debug("slack: ignoring an event that cannot be parsed", "type", outer.Type, "err", err)
		w.WriteHeader(http.StatusOK)
		return
	}
	switch ev.Type {
	case slackevents.URLVerification:
		uv, ok := ev.Data.(*slackevents.EventsAPIURLVerificationEvent)
		if !ok {
			http.Error(w, "malformed url_verification", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"challenge": uv.Challenge})
		return
	case slackevents.AppRateLimited:
		c.log.Warn("slack: Slack is rate limiting this app's event subscriptions (app_rate_limited)")
		w.WriteHeader(http.StatusOK)
		return
	case slackevents.CallbackEvent:
	default:
		w.WriteHeader(http.StatusOK)
		return
	}

	c.sinkMu.Lock()
	sink := c.sink
	c.sinkMu.Unlock()
	if sink == nil {
		http.Error(w, "not running", http.StatusServiceUnavailable)
		return
	}
	if n := r.Header.Get("X-Slack-Retry-Num"); n != "" {
		c.log.Debug("slack: redelivered event", "retry_num", n, "retry_reason", r.Header.Get("X-Slack-Retry-Reason"))
	}
	ctx := r.Context()
	// Serialize conversion and Handle per channel, so one channel's messages
	// reach the sink one at a time while other channels proceed.
	unlock := c.chatMu.Lock(eventChat(ev))
	defer unlock()
	msg, deliver := c.normalize(ctx, ev)
	if deliver {
		if err := sink.Handle(ctx, msg); err != nil {
			c.log.Warn("slack: message not persisted; answering 500 so Slack retries", "message_id", msg.MessageID, "err", err)
			http.Error(w, "not persisted", http.StatusInternalServerError)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

var (
	errNoSignature = errors.New("missing X-Slack-Signature or X-Slack-Request-Timestamp")
	errStale       = errors.New("request timestamp outside the accepted window")
	errBadSig      = errors.New("signature mismatch")
)

// verifySignature checks Slack's v0 request signature: "v0=" + hex
// HMAC-SHA256(signing secret, "v0:" + timestamp + ":" + body), with the
// timestamp within SignatureMaxAge of Now.
func (c *Adapter) verifySignature(h http.Header, body []byte) error {
	sig, tsHeader := h.Get("X-Slack-Signature"), h.Get("X-Slack-Request-Timestamp")
	if sig == "" || tsHeader == "" || !strings.HasPrefix(sig, "v0=") {
		return errNoSignature
	}
	ts, err := strconv.ParseInt(tsHeader, 10, 64)
	if err != nil {
		return errNoSignature
	}
	age := c.opts.Now().Sub(time.Unix(ts, 0))
	if age > c.opts.SignatureMaxAge || age < -c.opts.SignatureMaxAge {
		return errStale
	}
	mac := hmac.New(sha256.New, []byte(c.opts.SigningSecret))
	_, _ = io.WriteString(mac, "v0:"+tsHeader+":")
	_, _ = mac.Write(body)
	want := "v0=" + hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(sig), []byte(want)) {
		return errBadSig
	}
	return nil
}
