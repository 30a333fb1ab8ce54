package telegram

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"golang.org/x/time/rate"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/markup"
)

// MigratedError reports that a group was upgraded to a supergroup: Telegram
// refuses messages to the old chat id and names the new one. Send, Edit and
// typing return it wrapped in a permanent channels.SendError; the handler
// finds it with errors.As (on *MigratedError, or on
// interface{ MovedTo() channels.Target } to stay platform-neutral) and moves
// the session to MovedTo().
type MigratedError struct {
	From      channels.Target // the target that was addressed
	NewChatID int64           // the supergroup's id
	Err       error           // the library's *bot.MigrateError
}

func (e *MigratedError) Error() string {
	return fmt.Sprintf("telegram: chat %s was upgraded to supergroup %d", e.From.ChatID, e.NewChatID)
}

func (e *MigratedError) Unwrap() error { return e.Err }

// MovedTo is the target the chat lives at now (same channel and thread).
func (e *MigratedError) MovedTo() channels.Target {
	return channels.Target{Channel: e.From.Channel, ChatID: strconv.FormatInt(e.NewChatID, 10), ThreadID: e.From.ThreadID}
}

// Send delivers one chunk (Telegram HTML) and returns "<chat_id>:<message_id>".
// A chunk Telegram cannot parse is resent once as out.Plain without a parse
// mode. Errors are classified for the handler's retry path: 429 → RateLimited
// with retry_after; 403, 400, 401, 404, migration and any other {"ok":false}
// refusal (also one without an error_code) → Permanent (migration wraps
// *MigratedError); 5xx, 420, 409 and connection failures before the request
// was written (refused dial, a kept-alive connection the server had closed)
// → Temporary; a transport failure after the request may have been written
// → Ambiguous.
func (c *Adapter) Send(ctx context.Context, out channels.Outgoing) (string, error) {
	chatID, err := parseChatID(out.Target.ChatID)
	if err != nil {
		return "", channels.Permanent(err)
	}
	if strings.TrimSpace(out.Text) == "" && strings.TrimSpace(out.Plain) == "" {
		return "", channels.Permanent(errors.New("telegram: empty message"))
	}
	params := &bot.SendMessageParams{ChatID: chatID, Text: out.Text, ParseMode: models.ParseModeHTML}
	if strings.TrimSpace(out.Text) == "" {
		params.Text, params.ParseMode = out.Plain, ""
	}
	if out.Target.ThreadID != "" {
		tid, err := strconv.Atoi(out.Target.ThreadID)
		if err != nil {
			return "", channels.Permanent(fmt.Errorf("telegram: thread id %q is not a number", out.Target.ThreadID))
		}
		params.MessageThreadID = tid
	}
	// Quote-replies only make sense in groups; in a private chat the answer
	// follows the question anyway.
	if out.ReplyTo != "" && chatID < 0 {
		if mid, ok := parseMessageRef(out.ReplyTo, chatID); ok {
			params.ReplyParameters = &models.ReplyParameters{MessageID: mid, AllowSendingWithoutReply: true}
		}
	}
	if !out.Paced {
		if err := c.pace(ctx, out.Target.ChatID); err != nil {
			return "", err
		}
	}
	msg, err := c.sendMessage(ctx, params)
	if err != nil && params.ParseMode != "" && isParseError(err) {
		plain := out.Plain
		if strings.TrimSpace(plain) == "" {
			plain = stripHTML(out.Text)
		}
		c.log.Warn("telegram rejected the markup; resending as plain text", "chat", chatID, "err", c.redact(err))
		params.Text, params.ParseMode = plain, ""
		msg, err = c.sendMessage(ctx, params)
	}
	if err != nil {
		return "", c.classify(err, out.Target)
	}
	return strconv.FormatInt(msg.Chat.ID, 10) + ":" + strconv.Itoa(msg.ID), nil
}

func (c *Adapter) sendMessage(ctx context.Context, p *bot.SendMessageParams) (*sentMessage, error) {
	var m sentMessage
	if err := c.call(ctx, "sendMessage", p, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// Edit replaces the text of a message the bot sent (HTML). "message is not
// modified" counts as success; markup Telegram cannot parse is retried once
// as plain text.
func (c *Adapter) Edit(ctx context.Context, target channels.Target, messageID string, text string) error {
	chatID, err := parseChatID(target.ChatID)
	if err != nil {
		return channels.Permanent(err)
	}
	mid, ok := parseMessageRef(messageID, chatID)
	if !ok {
		return channels.Permanent(fmt.Errorf("telegram: message id %q does not belong to chat %d", messageID, chatID))
	}
	if strings.TrimSpace(text) == "" {
		return channels.Permanent(errors.New("telegram: empty message"))
	}
	if err := c.global.Wait(ctx); err != nil {
		return fmt.Errorf("telegram: wait for send slot: %w", err)
	}
	params := &bot.EditMessageTextParams{ChatID: chatID, MessageID: mid, Text: text, ParseMode: models.ParseModeHTML}
	err = c.editMessage(ctx, params)
	if err != nil && isParseError(err) {
		c.log.Warn("telegram rejected the markup of an edit; using plain text", "chat", chatID, "err", c.redact(err))
		params.Text, params.ParseMode = stripHTML(text), ""
		err = c.editMessage(ctx, params)
	}
	if err == nil || isNotModified(err) {
		return nil
	}
	return c.classify(err, target)
}

func (c *Adapter) editMessage(ctx context.Context, p *bot.EditMessageTextParams) error {
	return c.call(ctx, "editMessageText", p, nil)
}

// WaitSendSlot implements channels.Pacer: the shared outbound path waits
// for the slot before recording its send intent, then calls Send with
// Outgoing.Paced set.
func (c *Adapter) WaitSendSlot(ctx context.Context, target channels.Target) error {
	return c.pace(ctx, target.ChatID)
}

// pace waits for the chat's and the global send slot.
func (c *Adapter) pace(ctx context.Context, chat string) error {
	if err := c.chatLimiter(chat).Wait(ctx); err != nil {
		return fmt.Errorf("telegram: wait for send slot: %w", err)
	}
	if err := c.global.Wait(ctx); err != nil {
		return fmt.Errorf("telegram: wait for send slot: %w", err)
	}
	return nil
}

// chatLimiter returns the chat's limiter. Idle limiters (full bucket) are
// dropped when the map grows, so it stays bounded by the active chats.
func (c *Adapter) chatLimiter(chat string) *rate.Limiter {
	c.limitersMu.Lock()
	defer c.limitersMu.Unlock()
	if l, ok := c.limiters[chat]; ok {
		return l
	}
	if len(c.limiters) >= 4096 {
		now := time.Now()
		for k, l := range c.limiters {
			if l.TokensAt(now) >= float64(l.Burst()) {
				delete(c.limiters, k)
			}
		}
	}
	l := rate.NewLimiter(c.opts.PerChatRate, c.opts.PerChatBurst)
	c.limiters[chat] = l
	return l
}

// classify maps a library error to the channels error kinds.
func (c *Adapter) classify(err error, target channels.Target) error {
	var tm *bot.TooManyRequestsError
	var mig *bot.MigrateError
	red := c.redact(err)
	switch {
	case errors.As(err, &tm):
		after := time.Duration(tm.RetryAfter) * time.Second
		if after <= 0 {
			after = time.Second
		}
		return channels.RateLimited(after, red)
	case errors.As(err, &mig):
		return channels.Permanent(&MigratedError{From: target, NewChatID: int64(mig.MigrateToChatID), Err: red})
	case errors.Is(err, bot.ErrorForbidden), errors.Is(err, bot.ErrorBadRequest),
		errors.Is(err, bot.ErrorUnauthorized), errors.Is(err, bot.ErrorNotFound):
		return channels.Permanent(red)
	case errors.Is(err, bot.ErrorConflict):
		return channels.Temporary(red)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return channels.Temporary(red) // never connected: nothing was sent
		}
		// net/http reports a kept-alive connection the server had closed
		// before the request was written as this: nothing was sent.
		if strings.Contains(err.Error(), "server closed idle connection") {
			return channels.Temporary(red)
		}
		return channels.Ambiguous(red)
	}
	// The library reports other {"ok":false} answers as "error response from
	// telegram for method M, CODE description": the server answered and
	// nothing was posted. 5xx and 420 (flood) are worth retrying; any other
	// refusal (no error_code at all, an unlisted 4xx) would be refused again.
	if _, rest, ok := strings.Cut(err.Error(), "error response from telegram"); ok {
		if code := responseCode(rest); code >= 500 || code == 420 {
			return channels.Temporary(red)
		}
		return channels.Permanent(red)
	}
	// Unreadable responses and body read failures: the request was processed
	// or not; we cannot tell.
	return channels.Ambiguous(red)
}

// responseCode reads CODE from the rest of the library's "error response
// from telegram for method M, CODE description" (0 when absent).
func responseCode(rest string) int {
	_, after, ok := strings.Cut(rest, ", ")
	if !ok {
		return 0
	}
	f := strings.Fields(after)
	if len(f) == 0 {
		return 0
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return n
}

func isParseError(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) && strings.Contains(err.Error(), "can't parse entities")
}

func isNotModified(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) && strings.Contains(err.Error(), "message is not modified")
}

// parseChatID accepts a numeric chat id (Switchboard targets always use ids).
func parseChatID(s string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("telegram: chat id %q is not a number", s)
	}
	return id, nil
}

// parseMessageRef accepts "<chat_id>:<message_id>" (for this chat) or a bare
// message id.
func parseMessageRef(ref string, chatID int64) (int, bool) {
	ref = strings.TrimSpace(ref)
	if chat, mid, ok := strings.Cut(ref, ":"); ok {
		if chat != strconv.FormatInt(chatID, 10) {
			return 0, false
		}
		ref = mid
	}
	n, err := strconv.Atoi(ref)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

// stripHTML turns Telegram HTML into the text it displays, for the plain-text
// fallback of edits (Send has the chunk's Plain form).
func stripHTML(s string) string {
	return html.UnescapeString(tagRE.ReplaceAllString(s, ""))
}

// DefaultTypingDelay is how long a turn runs before "typing…" is shown
// (channels.QuickAnswer). An answer ready sooner goes out with no
// sendChatAction before it — Telegram clears the indicator when the message
// arrives, so it would only have flashed.
const DefaultTypingDelay = channels.QuickAnswer

// StartTyping shows "typing…" in the target chat once TypingDelay has
// passed, and refreshes it every TypingInterval until stop is called or ctx
// ends (channels.TypingLoop: stop lets a call in flight land first, so it is
// never after the answer). Failures are logged, never returned.
func (c *Adapter) StartTyping(ctx context.Context, target channels.Target) (stop func()) {
	chatID, err := parseChatID(target.ChatID)
	if err != nil {
		c.log.Warn("typing indicator skipped", "err", err)
		return func() {}
	}
	params := &bot.SendChatActionParams{ChatID: chatID, Action: models.ChatActionTyping}
	if target.ThreadID != "" {
		if tid, err := strconv.Atoi(target.ThreadID); err == nil && tid > 0 {
			params.MessageThreadID = tid
		}
	}
	return channels.TypingLoop{Delay: c.opts.TypingDelay, Interval: c.opts.TypingInterval, After: c.opts.After,
		Show: func(ctx context.Context) { c.sendTyping(ctx, params, target) }}.Start(ctx)
}

func (c *Adapter) sendTyping(ctx context.Context, p *bot.SendChatActionParams, target channels.Target) {
	if err := c.call(ctx, "sendChatAction", p, nil); err != nil && ctx.Err() == nil {
		c.log.Warn("typing indicator failed", "target", target.String(), "err", c.classify(err, target))
	}
}

// ChunkLimit leaves headroom under Telegram's 4096-character limit for the
// entities the HTML expands to.
const ChunkLimit = 4000

// Format converts the model's Markdown to Telegram HTML chunks under the
// message limit, code fences never broken (channels/markup).
func (c *Adapter) Format(markdown string) []channels.Chunk {
	return markup.TelegramChunks(markdown, ChunkLimit)
}

// Previews implements channels.Previewer: private chats (positive ids) can
// show sendMessageDraft previews unless the server said it does not know
// the method.
func (c *Adapter) Previews(target channels.Target) bool {
	if c.noPreviews.Load() {
		return false
	}
	id, err := parseChatID(target.ChatID)
	return err == nil && id > 0
}

// Preview shows text (Telegram HTML) as the draft draftID of a private chat
// with sendMessageDraft. Markup Telegram cannot parse is shown as plain text.
// A 404 answer means the server does not know the method: it is remembered
// for the process (logged once) and ErrNoPreviews is returned, so the caller
// streams by edits. Other failures are classified like Send's.
func (c *Adapter) Preview(ctx context.Context, target channels.Target, draftID int64, text string) error {
	if c.noPreviews.Load() {
		return channels.ErrNoPreviews
	}
	chatID, err := parseChatID(target.ChatID)
	if err != nil {
		return channels.Permanent(err)
	}
	if chatID < 0 {
		return channels.Permanent(fmt.Errorf("telegram: previews need a private chat, not %d", chatID))
	}
	if draftID == 0 {
		return channels.Permanent(errors.New("telegram: draft id must not be zero"))
	}
	if strings.TrimSpace(text) == "" {
		return channels.Permanent(errors.New("telegram: empty message"))
	}
	if err := c.global.Wait(ctx); err != nil {
		return fmt.Errorf("telegram: wait for send slot: %w", err)
	}
	params := &bot.SendMessageDraftParams{ChatID: chatID, DraftID: strconv.FormatInt(draftID, 10), Text: text,
		ParseMode: models.ParseModeHTML}
	if target.ThreadID != "" {
		if tid, err := strconv.Atoi(target.ThreadID); err == nil && tid > 0 {
			params.MessageThreadID = tid
		}
	}
	err = c.sendDraft(ctx, params)
	if err != nil && isParseError(err) {
		params.Text, params.ParseMode = stripHTML(text), ""
		err = c.sendDraft(ctx, params)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bot.ErrorNotFound):
		if c.noPreviews.CompareAndSwap(false, true) {
			c.log.Info("the Bot API server does not know sendMessageDraft; private chats stream by editing a message",
				"err", c.redact(err))
		}
		return fmt.Errorf("telegram: %w", channels.ErrNoPreviews)
	}
	return c.classify(err, target)
}

func (c *Adapter) sendDraft(ctx context.Context, p *bot.SendMessageDraftParams) error {
	return c.call(ctx, "sendMessageDraft", p, nil)
}
