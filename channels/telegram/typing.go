package telegram

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/switchboard-bot/switchboard/channels"
)

// StartTyping shows "typing…" in the target chat and refreshes it every
// TypingInterval until stop is called or ctx ends. Failures are logged, never
// returned. stop is idempotent; it cancels a call in flight and returns once
// the refresh goroutine has ended, so no sendChatAction follows it.
func (c *Channel) StartTyping(ctx context.Context, target channels.Target) (stop func()) {
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
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(c.opts.TypingInterval)
		defer ticker.Stop()
		for {
			c.sendTyping(ctx, params, target)
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}

func (c *Channel) sendTyping(ctx context.Context, p *bot.SendChatActionParams, target channels.Target) {
	if ctx.Err() != nil {
		return
	}
	cctx, cancel := c.callCtx(ctx)
	defer cancel()
	if _, err := c.bot.SendChatAction(cctx, p); err != nil && ctx.Err() == nil {
		c.log.Warn("typing indicator failed", "target", target.String(), "err", c.classify(err, target))
	}
}
