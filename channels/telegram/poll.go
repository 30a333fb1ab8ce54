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
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/retry"
)

// allowedUpdates is what Run asks Telegram for. Edited messages are fetched
// only to be logged and ignored (see the package doc).
var allowedUpdates = []string{models.AllowedUpdateMessage, models.AllowedUpdateEditedMessage}

func (c *Adapter) runPolling(ctx context.Context, sink channels.Sink) error {
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
	poll := c.retryPolicy()
	poll.OnRetry = func(_ int, wait time.Duration, err error) {
		c.log.Warn("getUpdates failed", "err", err, "retry_in", wait)
	}
	handleBackoff := c.retryPolicy().Backoff() // failed Handles in a row
	for {
		if ctx.Err() != nil {
			return nil
		}
		var batch []json.RawMessage
		err := retry.Do(ctx, poll, func(ctx context.Context) error {
			var err error
			if batch, err = c.getUpdates(ctx, offset); err != nil && ctx.Err() == nil {
				c.ready.Store(false)
			}
			return c.pollFailed(err)
		})
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("telegram: getUpdates: %w", err)
		}
		c.lastOK.Store(c.now().UnixNano())
		c.ready.Store(true)

		if id, err := c.handleBatch(ctx, sink, batch, &offset); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			wait := handleBackoff.Next()
			c.log.Warn("update not accepted by the handler; it will be fetched again",
				"update_id", id, "err", err, "retry_in", wait)
			if retry.Sleep(ctx, wait) != nil {
				return nil
			}
		} else {
			handleBackoff.Reset()
		}
	}
}

// retryPolicy is the wait after a failed getUpdates or Handle: RetryMin
// doubling up to RetryMax, jittered; polls retry until they work.
func (c *Adapter) retryPolicy() retry.Policy {
	return retry.Policy{Initial: c.opts.RetryMin, Max: c.opts.RetryMax, Jitter: retry.DefaultJitter}
}

// pollFailed says what a failed getUpdates means to the retry policy: a
// rejected token ends Run (permanent); anything else is waited out (at least
// Telegram's retry_after, else the next backoff step).
func (c *Adapter) pollFailed(err error) error {
	var ae *apiError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae) && (ae.Code == http.StatusUnauthorized || ae.Code == http.StatusNotFound):
		return retry.Permanent(err)
	case ae != nil && ae.RetryAfter > 0:
		return retry.After(time.Duration(ae.RetryAfter)*time.Second, err)
	}
	return err
}

// handleBatch hands a batch's updates to the sink and moves *offset past
// every update accepted (or undecodable). Different chats' updates are
// handed over concurrently (at most Options.IntakeWorkers chats at once), so
// their inbox writes share a commit; one chat's updates go one at a time, in
// order, and a chat stops at its first refused update. When the sink refused
// one, *offset stops at the lowest refused update id, which handleBatch
// returns with its error: it and everything after it are fetched again (the
// handler's persisted dedup drops the ones it already accepted).
func (c *Adapter) handleBatch(ctx context.Context, sink channels.Sink, batch []json.RawMessage, offset *int64) (int64, error) {
	var (
		next  = *offset
		chats []*chatUpdates
		byID  map[int64]*chatUpdates
	)
	for _, raw := range batch {
		var upd update
		if err := json.Unmarshal(raw, &upd); err != nil || upd.ID == 0 {
			id, ok := updateIDOf(raw)
			if !ok {
				c.log.Error("getUpdates returned an update without update_id; skipped", "err", err)
				continue
			}
			// A payload the adapter's types cannot represent would
			// fail forever: confirm it and move on.
			c.log.Error("undecodable update skipped", "update_id", id, "err", err)
			next = max(next, id+1)
			continue
		}
		next = max(next, upd.ID+1)
		chat := updateChat(&upd)
		cu := byID[chat]
		if cu == nil {
			if byID == nil {
				byID = make(map[int64]*chatUpdates, len(batch))
			}
			cu = &chatUpdates{}
			byID[chat] = cu
			chats = append(chats, cu)
		}
		cu.updates = append(cu.updates, &upd)
	}
	if len(chats) == 1 {
		chats[0].run(ctx, c, sink)
	} else if len(chats) > 1 {
		sem := make(chan struct{}, c.opts.IntakeWorkers)
		var wg sync.WaitGroup
		for _, cu := range chats {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				cu.run(ctx, c, sink)
			}()
		}
		wg.Wait()
	}
	var failedID int64
	var failedErr error
	for _, cu := range chats {
		if cu.err != nil && (failedErr == nil || cu.failedID < failedID) {
			failedID, failedErr = cu.failedID, cu.err
		}
	}
	if failedErr != nil {
		*offset = failedID
		return failedID, failedErr
	}
	*offset = next
	return 0, nil
}

// chatUpdates are one chat's updates of a batch, in order, and the first
// one the sink refused.
type chatUpdates struct {
	updates  []*update
	failedID int64
	err      error
}

// run hands the updates to the sink in order until one is refused.
func (cu *chatUpdates) run(ctx context.Context, c *Adapter, sink channels.Sink) {
	for _, upd := range cu.updates {
		if err := c.dispatch(ctx, sink, upd); err != nil {
			cu.failedID, cu.err = upd.ID, err
			return
		}
	}
}

// updateChat is the chat an update belongs to (0 for kinds without one,
// which then share an order).
func updateChat(u *update) int64 {
	switch {
	case u.Message != nil:
		return u.Message.Chat.ID
	case u.EditedMessage != nil:
		return u.EditedMessage.Chat.ID
	}
	return 0
}

// dispatch normalizes one update and hands it to the sink; ignored updates
// return nil (they are confirmed).
func (c *Adapter) dispatch(ctx context.Context, sink channels.Sink, upd *update) error {
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
func (c *Adapter) getUpdates(ctx context.Context, offset int64) ([]json.RawMessage, error) {
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
