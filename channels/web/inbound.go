package web

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/channels"
)

// DefaultUser is the sender name of a Post without one.
const DefaultUser = "operator"

// maxConvID and maxUser bound the ids a console passes in.
const (
	maxConvID = 64
	maxUser   = 64
)

// Post hands an operator's message in conversation conv to the handler, as
// every adapter hands a platform message: Direct, never gated, with a fresh
// message id. While the channel is (re)starting it waits for it up to
// Options.StartWait. It returns the message id once the handler has persisted the
// message (or deliberately dropped it), or the handler's error. The answer
// arrives later as events of conv (Subscribe, History).
func (a *Adapter) Post(ctx context.Context, conv, user, text string) (string, error) {
	return a.post(ctx, conv, user, text, nil)
}

// post is Post with attachments (PostFile); text may be empty with media.
func (a *Adapter) post(ctx context.Context, conv, user, text string, media []channels.Media) (string, error) {
	if err := CheckConv(conv); err != nil {
		return "", err
	}
	user = strings.TrimSpace(user)
	if user == "" {
		user = DefaultUser
	}
	if len(user) > maxUser || !utf8.ValidString(user) || strings.ContainsAny(user, ":\r\n\t") {
		return "", fmt.Errorf("web: user name %q is not valid: up to %d characters, no ':' or line breaks", clip(user), maxUser)
	}
	if strings.TrimSpace(text) == "" && len(media) == 0 {
		return "", errors.New("web: empty message")
	}
	if !utf8.ValidString(text) {
		return "", errors.New("web: the message is not valid UTF-8")
	}
	sink, err := a.currentSink(ctx)
	if err != nil {
		return "", err
	}
	msg := channels.Message{
		Channel:   Name,
		ChatID:    conv,
		MessageID: a.nextID(),
		Sender:    channels.Sender{ID: user, Name: user},
		Text:      text,
		Media:     media,
		Direct:    true,
		Time:      a.opts.Now(),
	}
	if err := sink.Handle(ctx, msg); err != nil {
		return "", fmt.Errorf("web: message not accepted: %w", err)
	}
	post := Event{Kind: KindPost, ID: msg.MessageID, Text: text, Time: msg.Time, From: user}
	if len(media) > 0 {
		post.File = media[0].Name
	}
	a.recordPost(conv, post)
	return msg.MessageID, nil
}

// CheckConv accepts a conversation id: 1-64 characters of A-Z a-z 0-9 . _ -,
// so "web:<conv>" is a valid target address.
func CheckConv(conv string) error {
	if conv == "" || len(conv) > maxConvID {
		return fmt.Errorf("web: conversation id must have 1-%d characters", maxConvID)
	}
	for _, r := range conv {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("web: conversation id %q may only have letters, digits, '.', '_' and '-'", clip(conv))
		}
	}
	return nil
}

func clip(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}
