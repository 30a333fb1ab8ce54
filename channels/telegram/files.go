package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/switchboard-bot/switchboard/channels"
)

// Files back to the chat (send_file): an image (JPEG, PNG, WebP) of at most
// MaxPhotoSize goes out with sendPhoto, so the chat shows it inline; any
// other file with sendDocument. Both are multipart uploads; the caption is
// plain text (no parse mode), cut to Telegram's 1024 characters. The shared
// delivery path has already waited for the chat's send slot (Pacer).

// Telegram's upload limits for bots.
const (
	MaxFileSize  = 50 << 20 // sendDocument: "bots can currently send files of up to 50 MB"
	MaxPhotoSize = 10 << 20 // sendPhoto
	maxCaption   = 1024
)

var _ channels.FileSender = (*Adapter)(nil)

// MaxFileSize implements channels.FileSender.
func (c *Adapter) MaxFileSize() int64 { return MaxFileSize }

// SendFile implements channels.FileSender; it returns "<chat_id>:<message_id>".
func (c *Adapter) SendFile(ctx context.Context, f channels.OutgoingFile) (string, error) {
	chatID, err := parseChatID(f.Target.ChatID)
	if err != nil {
		return "", channels.Permanent(err)
	}
	if len(f.Data) > MaxFileSize {
		return "", channels.Permanent(fmt.Errorf("telegram: %s is %d bytes; bots can send at most %d", f.Name, len(f.Data), MaxFileSize))
	}
	thread := 0
	if f.Target.ThreadID != "" {
		if thread, err = strconv.Atoi(f.Target.ThreadID); err != nil {
			return "", channels.Permanent(fmt.Errorf("telegram: thread id %q is not a number", f.Target.ThreadID))
		}
	}
	var reply *models.ReplyParameters
	if f.ReplyTo != "" && chatID < 0 {
		if mid, ok := parseMessageRef(f.ReplyTo, chatID); ok {
			reply = &models.ReplyParameters{MessageID: mid, AllowSendingWithoutReply: true}
		}
	}
	name := f.Name
	if strings.TrimSpace(name) == "" {
		name = "file"
	}
	caption := cutRunes(f.Caption, maxCaption)
	upload := &models.InputFileUpload{Filename: name, Data: bytes.NewReader(f.Data)}
	cctx, cancel := c.callCtx(ctx)
	defer cancel()
	var msg *models.Message
	if isPhoto(f.MIME) && len(f.Data) <= MaxPhotoSize {
		msg, err = c.bot.SendPhoto(cctx, &bot.SendPhotoParams{ChatID: chatID, MessageThreadID: thread, Photo: upload,
			Caption: caption, ReplyParameters: reply})
	} else {
		msg, err = c.bot.SendDocument(cctx, &bot.SendDocumentParams{ChatID: chatID, MessageThreadID: thread, Document: upload,
			Caption: caption, ReplyParameters: reply})
	}
	if err != nil {
		return "", c.classify(err, f.Target)
	}
	if msg == nil {
		return "", channels.Ambiguous(errors.New("telegram: empty answer to a file upload"))
	}
	return strconv.FormatInt(msg.Chat.ID, 10) + ":" + strconv.Itoa(msg.ID), nil
}

// isPhoto reports whether Telegram shows a file of this type as a photo.
func isPhoto(mime string) bool {
	switch strings.ToLower(strings.TrimSpace(strings.SplitN(mime, ";", 2)[0])) {
	case "image/jpeg", "image/png", "image/webp":
		return true
	}
	return false
}

// cutRunes cuts s to at most n runes.
func cutRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
