package slack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/markup"
)

// permanentCodes are Slack API errors that no retry can fix.
var permanentCodes = map[string]bool{
	"invalid_auth": true, "not_authed": true, "account_inactive": true, "token_revoked": true,
	"token_expired": true, "no_permission": true, "missing_scope": true, "not_allowed_token_type": true,
	"channel_not_found": true, "not_in_channel": true, "is_archived": true, "restricted_action": true,
	"restricted_action_read_only_channel": true, "restricted_action_thread_only_channel": true,
	"restricted_action_non_threadable_channel": true, "team_access_not_granted": true,
	"msg_too_long": true, "no_text": true, "too_many_attachments": true, "invalid_blocks": true,
	"invalid_arguments": true, "invalid_arg_name": true, "invalid_charset": true,
	"invalid_form_data": true, "invalid_post_type": true, "missing_post_type": true,
	"cant_update_message": true, "edit_window_closed": true, "message_not_found": true,
	"thread_not_found": true, "user_not_found": true, "ekm_access_denied": true,
	"access_denied": true, "as_user_not_supported": true, "duplicate_message_not_found": true,
}

// ambiguousCodes are errors after which Slack says part of the operation may
// have succeeded ("It's possible some aspect of the operation succeeded").
var ambiguousCodes = map[string]bool{"internal_error": true, "fatal_error": true}

// Send posts one chunk with chat.postMessage (mrkdwn text; thread_ts when the
// target has a thread) and returns the message ts.
func (c *Adapter) Send(ctx context.Context, out channels.Outgoing) (string, error) {
	if out.Target.ChatID == "" {
		return "", channels.Permanent(errors.New("slack: send: no channel id"))
	}
	text := out.Text
	if strings.TrimSpace(text) == "" {
		text = out.Plain
	}
	if strings.TrimSpace(text) == "" {
		return "", channels.Permanent(errors.New("slack: send: empty message"))
	}
	opts := []slackapi.MsgOption{slackapi.MsgOptionText(text, false)}
	if out.Target.ThreadID != "" {
		opts = append(opts, slackapi.MsgOptionTS(out.Target.ThreadID))
	}
	tctx, written := traceWrites(ctx)
	_, ts, err := c.api.PostMessageContext(tctx, out.Target.ChatID, opts...)
	if err != nil {
		return "", classify(ctx, "chat.postMessage", err, written.Load(), true)
	}
	c.rememberJoinedThread(out.Target)
	return ts, nil
}

// Edit replaces a message's text with chat.update. messageID is the ts Send
// returned (a "<channel>:<ts>" id is accepted too).
func (c *Adapter) Edit(ctx context.Context, target channels.Target, messageID string, text string) error {
	if i := strings.LastIndexByte(messageID, ':'); i >= 0 {
		messageID = messageID[i+1:]
	}
	if messageID == "" || target.ChatID == "" {
		return channels.Permanent(errors.New("slack: edit: missing channel or message ts"))
	}
	if strings.TrimSpace(text) == "" {
		return channels.Permanent(errors.New("slack: edit: empty message"))
	}
	tctx, written := traceWrites(ctx)
	_, _, _, err := c.api.UpdateMessageContext(tctx, target.ChatID, messageID, slackapi.MsgOptionText(text, false))
	if err != nil {
		return classify(ctx, "chat.update", err, written.Load(), false)
	}
	return nil
}

// traceWrites returns a context whose HTTP request reports, through the flag,
// whether the request was fully written to the connection.
func traceWrites(ctx context.Context) (context.Context, *atomic.Bool) {
	written := &atomic.Bool{}
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				written.Store(true)
			}
		},
	}), written
}

// classify maps a slack-go error to the shared error kinds. post marks
// non-idempotent calls, where an unknown outcome is Ambiguous.
func classify(ctx context.Context, method string, err error, written, post bool) error {
	wrapped := fmt.Errorf("slack: %s: %w", method, err)
	var rl *slackapi.RateLimitedError
	if errors.As(err, &rl) {
		return channels.RateLimited(rl.RetryAfter, wrapped)
	}
	var se slackapi.SlackErrorResponse
	if errors.As(err, &se) {
		switch {
		case se.Err == "ratelimited":
			return channels.RateLimited(time.Second, wrapped)
		case permanentCodes[se.Err]:
			return channels.Permanent(wrapped)
		case ambiguousCodes[se.Err] && post:
			return channels.Ambiguous(wrapped)
		}
		return channels.Temporary(wrapped)
	}
	var sc slackapi.StatusCodeError
	if errors.As(err, &sc) {
		switch {
		case sc.Code == http.StatusTooManyRequests:
			return channels.RateLimited(time.Second, wrapped)
		case sc.Code >= 500 && post:
			return channels.Ambiguous(wrapped)
		case sc.Code >= 500 || sc.Code == http.StatusRequestTimeout:
			return channels.Temporary(wrapped)
		}
		return channels.Permanent(wrapped)
	}
	// Transport failure, or a response that could not be read or decoded.
	if written && post {
		return channels.Ambiguous(wrapped)
	}
	if ctx.Err() != nil {
		return channels.Permanent(wrapped) // canceled before anything was sent
	}
	return channels.Temporary(wrapped)
}

// typingStatus is the assistant thread status shown while a turn runs.
const typingStatus = "is thinking…"

// StartTyping shows "is thinking…" in an assistant thread with
// assistant.threads.setStatus and clears it on stop. Elsewhere Slack offers
// bots no typing indicator, so it posts nothing and stop is a no-op. Failures
// are logged, never returned. stop is idempotent and bounded by a 3s timeout.
func (c *Adapter) StartTyping(ctx context.Context, target channels.Target) (stop func()) {
	if !c.isAssistantThread(target) {
		return func() {}
	}
	set := func(ctx context.Context, status string) {
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		err := c.api.SetAssistantThreadsStatusContext(sctx, slackapi.AssistantThreadsSetStatusParameters{
			ChannelID: target.ChatID, ThreadTS: target.ThreadID, Status: status,
		})
		if err != nil {
			c.log.Debug("slack: assistant.threads.setStatus failed", "target", target.String(), "err", err)
		}
	}
	set(ctx, typingStatus)
	var once sync.Once
	return func() {
		once.Do(func() { set(context.WithoutCancel(ctx), "") })
	}
}

// Delivered looks in the conversation for a message of ours with exactly
// out's text, posted since `since` (the outbox intent's time): after a crash
// during chat.postMessage the shared outbound path asks before resending, so
// a post that did land is not duplicated (DESIGN §2). It returns the ts of
// the message when found.
func (c *Adapter) Delivered(ctx context.Context, out channels.Outgoing, since time.Time) (string, bool, error) {
	text := out.Text
	if strings.TrimSpace(text) == "" {
		text = out.Plain
	}
	oldest := strconv.FormatFloat(float64(since.Add(-time.Minute).UnixMicro())/1e6, 'f', 6, 64)
	var msgs []slackapi.Message
	if out.Target.ThreadID != "" {
		got, _, _, err := c.api.GetConversationRepliesContext(ctx, &slackapi.GetConversationRepliesParameters{
			ChannelID: out.Target.ChatID, Timestamp: out.Target.ThreadID, Oldest: oldest, Limit: 200})
		if err != nil {
			return "", false, classify(ctx, "conversations.replies", err, false, false)
		}
		msgs = got
	} else {
		resp, err := c.api.GetConversationHistoryContext(ctx, &slackapi.GetConversationHistoryParameters{
			ChannelID: out.Target.ChatID, Oldest: oldest, Limit: 200})
		if err != nil {
			return "", false, classify(ctx, "conversations.history", err, false, false)
		}
		msgs = resp.Messages
	}
	botUser, botID := c.BotUserID(), c.botBotID()
	if botUser == "" && botID == "" { // asked at start-up replay, before Run's auth.test
		if err := c.authTest(ctx); err != nil {
			return "", false, err
		}
		botUser, botID = c.BotUserID(), c.botBotID()
	}
	for _, m := range msgs {
		ours := (botUser != "" && m.User == botUser) || (botID != "" && m.BotID == botID)
		if ours && m.Text == text {
			return m.Timestamp, true, nil
		}
	}
	return "", false, nil
}

// ChunkLimit is the length Format splits answers under (Slack truncates near
// 40,000 characters; long messages are hard to read well before that).
const ChunkLimit = 3500

// Format converts Markdown to Slack mrkdwn chunks under ChunkLimit.
func (c *Adapter) Format(md string) []channels.Chunk { return markup.SlackChunks(md, ChunkLimit) }
