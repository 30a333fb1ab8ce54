package discord

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/markup"
	"github.com/switchboard-bot/switchboard/internal/retry"
)

// ChunkLimit (Discord's message limit) and MaxLines bound each chunk Format
// produces.
const (
	ChunkLimit = 2000
	MaxLines   = 17
)

// Format converts Markdown to Discord chunks of at most 2000 characters and
// about 17 lines, never breaking code fences.
func (c *Adapter) Format(md string) []channels.Chunk {
	return markup.DiscordChunks(md, ChunkLimit, MaxLines)
}

// postChannel is the Discord channel a target addresses.
func postChannel(t channels.Target) string {
	if t.ThreadID != "" {
		return t.ThreadID
	}
	return t.ChatID
}

func allowedMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}, RepliedUser: true}
}

// sendBody is discordgo.MessageSend plus the nonce fields v0.29.0 lacks.
type sendBody struct {
	*discordgo.MessageSend
	Nonce        string `json:"nonce,omitempty"`
	EnforceNonce bool   `json:"enforce_nonce,omitempty"`
}

// discordNonce maps an Outgoing.Nonce to Discord's ≤25-character nonce,
// deterministically.
func discordNonce(n string) string {
	if len(n) <= 25 {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return "sb" + hex.EncodeToString(sum[:])[:23]
}

// Send posts one chunk and returns the new message id.
func (c *Adapter) Send(ctx context.Context, out channels.Outgoing) (string, error) {
	chID := postChannel(out.Target)
	if chID == "" {
		return "", channels.Permanent(errors.New("discord: send: empty target"))
	}
	text := out.Text
	if text == "" {
		text = out.Plain
	}
	if strings.TrimSpace(text) == "" {
		return "", channels.Permanent(errors.New("discord: send: empty message"))
	}
	data := &discordgo.MessageSend{Content: text, AllowedMentions: allowedMentions()}
	if out.ReplyTo != "" && !c.isDM(chID) {
		no := false
		data.Reference = &discordgo.MessageReference{MessageID: out.ReplyTo, ChannelID: chID, FailIfNotExists: &no}
	}
	body := sendBody{MessageSend: data, Nonce: discordNonce(out.Nonce)}
	body.EnforceNonce = body.Nonce != ""
	endpoint := discordgo.EndpointChannelMessages(chID)
	var msg discordgo.Message
	err := c.do(ctx, "send", false, func(opts ...discordgo.RequestOption) error {
		resp, err := c.rest.RequestWithBucketID(http.MethodPost, endpoint, body, endpoint, opts...)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(resp, &msg); err != nil {
			return fmt.Errorf("%w: %v", discordgo.ErrJSONUnmarshal, err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if msg.ID == "" {
		return "", channels.Ambiguous(errors.New("discord: send: response carried no message id"))
	}
	return msg.ID, nil
}

// Edit replaces the text of a message the bot sent.
func (c *Adapter) Edit(ctx context.Context, target channels.Target, messageID, text string) error {
	chID := postChannel(target)
	if chID == "" || messageID == "" {
		return channels.Permanent(errors.New("discord: edit: empty target or message id"))
	}
	if strings.TrimSpace(text) == "" {
		return channels.Permanent(errors.New("discord: edit: empty message"))
	}
	content := text
	edit := &discordgo.MessageEdit{ID: messageID, Channel: chID, Content: &content, AllowedMentions: allowedMentions()}
	return c.do(ctx, "edit", true, func(opts ...discordgo.RequestOption) error {
		_, err := c.rest.ChannelMessageEditComplex(edit, opts...)
		return err
	})
}

// StartTyping shows "typing…" in the target once TypingDelay has passed and
// then every TypingInterval until stop is called (or ctx ends): a turn over
// sooner sends no typing call. Failures are logged, never returned.
func (c *Adapter) StartTyping(ctx context.Context, target channels.Target) (stop func()) {
	chID := postChannel(target)
	return channels.TypingLoop{Delay: c.opts.TypingDelay, Interval: c.opts.TypingInterval, After: c.opts.After,
		Show: func(ctx context.Context) {
			rctx, rcancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
			defer rcancel()
			err := c.rest.ChannelTyping(chID, discordgo.WithContext(rctx), discordgo.WithRetryOnRatelimit(false))
			if err != nil && ctx.Err() == nil {
				c.log.Debug("discord: typing indicator failed", "chat", chID, "err", err)
			}
		}}.Start(ctx)
}

// do runs one REST call with a per-call timeout and classifies its error.
// Short 429s (at most RateLimitMaxWait) are waited out exactly as Discord
// asks (internal/retry, no backoff of its own) and retried, at most twice;
// longer ones, and every other error, go back to delivery's retry policy.
func (c *Adapter) do(ctx context.Context, op string, idempotent bool, call func(...discordgo.RequestOption) error) error {
	policy := retry.Policy{MaxTries: 3, OnRetry: func(_ int, wait time.Duration, _ error) {
		c.log.Debug("discord: rate limited, waiting", "op", op, "retry_after", wait)
	}}
	waiting := false // the last attempt hit a short 429
	err := retry.Do(ctx, policy, func(ctx context.Context) error {
		waiting = false
		var wrote atomic.Bool
		trace := &httptrace.ClientTrace{
			GotConn: func(httptrace.GotConnInfo) { wrote.Store(false) },
			WroteRequest: func(i httptrace.WroteRequestInfo) {
				if i.Err == nil {
					wrote.Store(true)
				}
			},
		}
		rctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
		err := call(discordgo.WithContext(httptrace.WithClientTrace(rctx, trace)), discordgo.WithRetryOnRatelimit(false))
		cancel()
		if err == nil {
			return nil
		}
		var rl *discordgo.RateLimitError
		if errors.As(err, &rl) {
			limited := channels.RateLimited(rl.RetryAfter, fmt.Errorf("discord: %s: %w", op, err))
			if c.opts.RateLimitMaxWait > 0 && rl.RetryAfter <= c.opts.RateLimitMaxWait {
				waiting = true
				return retry.After(rl.RetryAfter, limited)
			}
			return retry.Permanent(limited)
		}
		return retry.Permanent(classify(ctx, op, err, wrote.Load() && !idempotent))
	})
	if err != nil && waiting && ctx.Err() != nil {
		return fmt.Errorf("discord: %s: %w", op, ctx.Err()) // cancelled while waiting out a 429
	}
	return err
}

// classify maps a discordgo/transport error to the shared error kinds.
func classify(ctx context.Context, op string, err error, mayExist bool) error {
	werr := fmt.Errorf("discord: %s: %w", op, err)
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		switch code := re.Response.StatusCode; {
		case code == http.StatusTooManyRequests:
			return channels.RateLimited(retryAfterHeader(re.Response.Header), werr)
		case code >= 500 || code == http.StatusRequestTimeout:
			return channels.Temporary(werr)
		default:
			return channels.Permanent(werr)
		}
	}
	if errors.Is(err, discordgo.ErrJSONUnmarshal) {
		// The platform answered 2xx: the message exists, its id is unknown.
		if mayExist {
			return channels.Ambiguous(werr)
		}
		return channels.Temporary(werr)
	}
	if ctx.Err() != nil && !mayExist {
		return fmt.Errorf("discord: %s: %w", op, ctx.Err())
	}
	if mayExist {
		return channels.Ambiguous(werr)
	}
	return channels.Temporary(werr)
}

func retryAfterHeader(h http.Header) time.Duration {
	var secs float64
	if _, err := fmt.Sscanf(h.Get("Retry-After"), "%g", &secs); err == nil && secs > 0 {
		return time.Duration(secs * float64(time.Second))
	}
	return time.Second
}
