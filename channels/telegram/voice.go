package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/switchboard-bot/switchboard/channels"
)

// SendVoice delivers f (OGG/Opus) as a voice note with sendVoice, uploaded
// as multipart, and returns "<chat_id>:<message_id>" (channels.VoiceSender:
// the spoken answer to a chat that sent a voice note). The caller has taken
// the chat's send slot (channels.Pacer). Errors are classified like Send's.
func (c *Adapter) SendVoice(ctx context.Context, f channels.OutgoingFile) (string, error) {
	chatID, err := parseChatID(f.Target.ChatID)
	if err != nil {
		return "", channels.Permanent(err)
	}
	if len(f.Data) == 0 {
		return "", channels.Permanent(errors.New("telegram: empty voice note"))
	}
	name := f.Name
	if name == "" {
		name = "voice.ogg"
	}
	params := &bot.SendVoiceParams{ChatID: chatID, Voice: &models.InputFileUpload{Filename: name, Data: bytes.NewReader(f.Data)},
		Caption: f.Caption}
	if f.Target.ThreadID != "" {
		tid, err := strconv.Atoi(f.Target.ThreadID)
		if err != nil {
			return "", channels.Permanent(fmt.Errorf("telegram: thread id %q is not a number", f.Target.ThreadID))
		}
		params.MessageThreadID = tid
	}
	if f.ReplyTo != "" && chatID < 0 { // as Send: quote-replies only in groups
		if mid, ok := parseMessageRef(f.ReplyTo, chatID); ok {
			params.ReplyParameters = &models.ReplyParameters{MessageID: mid, AllowSendingWithoutReply: true}
		}
	}
	cctx, cancel := c.callCtx(ctx)
	defer cancel()
	msg, err := c.bot.SendVoice(cctx, params)
	if err != nil {
		return "", c.classify(err, f.Target)
	}
	return strconv.FormatInt(msg.Chat.ID, 10) + ":" + strconv.Itoa(msg.ID), nil
}
