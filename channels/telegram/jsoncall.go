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
	"strings"
	"sync"

	"github.com/go-telegram/bot"
)

// The calls every answer makes (sendMessage, sendMessageDraft,
// sendChatAction, editMessageText) are posted here as one JSON body of known
// length, which the Bot API accepts for any method without a file. The
// library sends every call as a multipart form, built by reflection in a
// goroutine and streamed through a pipe in chunked encoding: on the
// Telegram-only load run that cost more CPU than anything but the store
// (BENCHMARKS.md, "Issue 35"). Errors are the library's own values and
// messages (bot.ErrorBadRequest, *bot.TooManyRequestsError, …), so classify
// and the parse-error fallbacks read them the same way.

// callBufs recycles request bodies.
var callBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// callResponse is the Bot API's envelope.
type callResponse struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	Description string          `json:"description"`
	ErrorCode   int             `json:"error_code"`
	Parameters  struct {
		RetryAfter      int `json:"retry_after"`
		MigrateToChatID int `json:"migrate_to_chat_id"`
	} `json:"parameters"`
}

// call posts params as JSON to method and decodes the result into dest
// (nil: ignored).
func (c *Adapter) call(ctx context.Context, method string, params, dest any) error {
	buf := callBufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 64<<10 {
			buf.Reset()
			callBufs.Put(buf)
		}
	}()
	buf.Reset()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false) // the text is Telegram HTML: keep it as is
	if err := enc.Encode(params); err != nil {
		return fmt.Errorf("error encode request for method %s, %w", method, err)
	}
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.apiURL+"/bot"+c.token+"/"+method, bytes.NewReader(buf.Bytes()))
	if err != nil {
		return c.redact(fmt.Errorf("error create request for method %s, %w", method, err))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = strings.ReplaceAll(ue.URL, c.token, "***")
		}
		return fmt.Errorf("error do request for method %s, %w", method, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("error read response body for method %s, %w", method, err)
	}
	var r callResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("error decode response body for method %s, %s, %w", method, truncate(string(body), 200), err)
	}
	if !r.OK {
		return apiCallError(method, &r)
	}
	if dest != nil {
		if err := json.Unmarshal(r.Result, dest); err != nil {
			return fmt.Errorf("error decode response result for method %s, %w", method, err)
		}
	}
	return nil
}

// apiCallError is the library's error for an {"ok":false} answer.
func apiCallError(method string, r *callResponse) error {
	switch r.ErrorCode {
	case http.StatusForbidden:
		return fmt.Errorf("%w, %s", bot.ErrorForbidden, r.Description)
	case http.StatusBadRequest:
		if r.Parameters.MigrateToChatID != 0 {
			return &bot.MigrateError{Message: fmt.Sprintf("%s: %s", bot.ErrorBadRequest, r.Description),
				MigrateToChatID: r.Parameters.MigrateToChatID}
		}
		return fmt.Errorf("%w, %s", bot.ErrorBadRequest, r.Description)
	case http.StatusUnauthorized:
		return fmt.Errorf("%w, %s", bot.ErrorUnauthorized, r.Description)
	case http.StatusNotFound:
		return fmt.Errorf("%w, %s", bot.ErrorNotFound, r.Description)
	case http.StatusConflict:
		return fmt.Errorf("%w, %s", bot.ErrorConflict, r.Description)
	case http.StatusTooManyRequests:
		return &bot.TooManyRequestsError{Message: fmt.Sprintf("%s, %s", bot.ErrorTooManyRequests, r.Description),
			RetryAfter: r.Parameters.RetryAfter}
	}
	return fmt.Errorf("error response from telegram for method %s, %d %s", method, r.ErrorCode, r.Description)
}

// sentMessage is what Send reads of the message Telegram answers with.
type sentMessage struct {
	ID   int `json:"message_id"`
	Chat struct {
		ID int64 `json:"id"`
	} `json:"chat"`
}
