package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/redact"
)

// allowedUpdates is what Run asks Telegram for. Edited messages are fetched
// only to be logged and ignored (see the package doc).
var allowedUpdates = []string{models.AllowedUpdateMessage, models.AllowedUpdateEditedMessage}

// Run connects and pushes inbound messages into sink until ctx is canceled
// (nil) or the Bot API rejects the token or the webhook cannot be set (error;
// the supervisor restarts Run with backoff). It calls getMe, registers the
// command menu, then either deletes any webhook and long-polls, or sets the
// webhook and waits for deliveries to WebhookHandler.
func (c *Channel) Run(ctx context.Context, sink channels.Sink) error {
	if sink == nil {
		return errors.New("telegram: Run needs a sink")
	}
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("telegram: Run is already active")
	}
	defer func() {
		c.ready.Store(false)
		c.sink.Store(nil)
		c.running.Store(false)
	}()

	cctx, cancel := c.callCtx(ctx)
	me, err := c.bot.GetMe(cctx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("telegram: getMe: %w", c.redact(err))
	}
	c.me.Store(me)
	c.log.Info("connected", "bot", me.Username, "mode", c.opts.Mode)
	c.registerCommands(ctx)

	if c.opts.Mode == ModeWebhook {
		return c.runWebhook(ctx, sink)
	}
	return c.runPolling(ctx, sink)
}

func (c *Channel) registerCommands(ctx context.Context) {
	if len(c.opts.Commands) == 0 {
		return
	}
	cmds := make([]models.BotCommand, 0, len(c.opts.Commands))
	for _, cmd := range c.opts.Commands {
		cmds = append(cmds, models.BotCommand{Command: cmd.Name, Description: cmd.Description})
	}
	cctx, cancel := c.callCtx(ctx)
	defer cancel()
	if _, err := c.bot.SetMyCommands(cctx, &bot.SetMyCommandsParams{Commands: cmds}); err != nil {
		c.log.Warn("setMyCommands failed; the command menu may be stale", "err", c.redact(err))
	}
}

func (c *Channel) runWebhook(ctx context.Context, sink channels.Sink) error {
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

func (c *Channel) runPolling(ctx context.Context, sink channels.Sink) error {
	cctx, cancel := c.callCtx(ctx)
	_, err := c.bot.DeleteWebhook(cctx, &bot.DeleteWebhookParams{})
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("telegram: deleteWebhook: %w", c.redact(err))
	}
	// The Bot API answered: connected. Without this, readiness waited for the
	// first long poll to return, which with no traffic takes PollTimeout.
	c.lastOK.Store(c.now().UnixNano())
	c.ready.Store(true)

	var offset int64
	var pollBackoff, handleBackoff time.Duration
	for {
		if ctx.Err() != nil {
			return nil
		}
		batch, err := c.getUpdates(ctx, offset)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			c.ready.Store(false)
			var ae *apiError
			if errors.As(err, &ae) && (ae.Code == http.StatusUnauthorized || ae.Code == http.StatusNotFound) {
				return fmt.Errorf("telegram: getUpdates: %w", err)
			}
			pollBackoff = c.nextBackoff(pollBackoff)
			wait := pollBackoff
			if ae != nil && ae.RetryAfter > 0 {
				wait = time.Duration(ae.RetryAfter) * time.Second
			}
			c.log.Warn("getUpdates failed", "err", err, "retry_in", wait)
			if channels.SleepContext(ctx, wait) != nil {
				return nil
			}
			continue
		}
		pollBackoff = 0
		c.lastOK.Store(c.now().UnixNano())
		c.ready.Store(true)

		failed := false
		for _, raw := range batch {
			var head struct {
				UpdateID int64 `json:"update_id"`
			}
			if err := json.Unmarshal(raw, &head); err != nil || head.UpdateID == 0 {
				c.log.Error("getUpdates returned an update without update_id; skipped", "err", err)
				continue
			}
			var upd models.Update
			if err := json.Unmarshal(raw, &upd); err != nil {
				// A payload the library's models cannot represent would
				// fail forever: confirm it and move on.
				c.log.Error("undecodable update skipped", "update_id", head.UpdateID, "err", err)
				offset = head.UpdateID + 1
				continue
			}
			if err := c.dispatch(ctx, sink, &upd); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				handleBackoff = c.nextBackoff(handleBackoff)
				c.log.Warn("update not accepted by the handler; it will be fetched again",
					"update_id", head.UpdateID, "err", err, "retry_in", handleBackoff)
				failed = true
				break
			}
			offset = head.UpdateID + 1
		}
		if failed {
			if channels.SleepContext(ctx, handleBackoff) != nil {
				return nil
			}
		} else {
			handleBackoff = 0
		}
	}
}

func (c *Channel) nextBackoff(d time.Duration) time.Duration {
	if d <= 0 {
		return c.opts.RetryMin
	}
	return min(d*2, c.opts.RetryMax)
}

// dispatch normalizes one update and hands it to the sink; ignored updates
// return nil (they are confirmed).
func (c *Channel) dispatch(ctx context.Context, sink channels.Sink, upd *models.Update) error {
	msg, ok := c.normalize(ctx, upd)
	if !ok {
		return nil
	}
	return sink.Handle(ctx, msg)
}

// apiError is an {"ok":false,…} answer to a call this package makes itself.
type apiError struct {
	Method      string
	Code        int
	Description string
	RetryAfter  int
}

func (e *apiError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("%s: %d %s (retry after %ds)", e.Method, e.Code, e.Description, e.RetryAfter)
	}
	return fmt.Sprintf("%s: %d %s", e.Method, e.Code, e.Description)
}

// getUpdates performs one long poll. offset 0 asks for every unconfirmed update.
func (c *Channel) getUpdates(ctx context.Context, offset int64) ([]json.RawMessage, error) {
	params := struct {
		Offset         int64    `json:"offset,omitempty"`
		Timeout        int      `json:"timeout"`
		AllowedUpdates []string `json:"allowed_updates"`
	}{offset, int(c.opts.PollTimeout / time.Second), allowedUpdates}
	body, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.PollTimeout+c.opts.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.apiURL+"/bot"+c.token+"/getUpdates", bytes.NewReader(body))
	if err != nil {
		return nil, c.redact(fmt.Errorf("getUpdates: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL carries the token
		}
		return nil, c.redact(fmt.Errorf("getUpdates: %w", err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("getUpdates: read response: %w", err)
	}
	var env struct {
		OK          bool              `json:"ok"`
		Result      []json.RawMessage `json:"result"`
		ErrorCode   int               `json:"error_code"`
		Description string            `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, &apiError{Method: "getUpdates", Code: resp.StatusCode, Description: "unreadable response: " + strconv.Quote(truncate(string(data), 200))}
	}
	if !env.OK {
		code := env.ErrorCode
		if code == 0 {
			code = resp.StatusCode
		}
		return nil, &apiError{Method: "getUpdates", Code: code, Description: env.Description, RetryAfter: env.Parameters.RetryAfter}
	}
	return env.Result, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
