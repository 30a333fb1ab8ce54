package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
)

// Files back to the chat (send_file): one message with the file as its
// attachment (multipart: payload_json + files[0], as discordgo encodes it)
// and the caption as its text, carrying the delivery's nonce with
// enforce_nonce, so a resend after a crash returns the message Discord
// already has instead of posting the file twice.

// MaxUpload is the attachment limit the adapter assumes: 25 MiB, Discord's
// limit in servers without a boost (boosted servers accept more; the
// adapter stays at the limit every chat has).
const MaxUpload = 25 << 20

var _ channels.FileSender = (*Adapter)(nil)

// MaxFileSize implements channels.FileSender.
func (c *Adapter) MaxFileSize() int64 { return MaxUpload }

// SendFile implements channels.FileSender; it returns the message id.
func (c *Adapter) SendFile(ctx context.Context, f channels.OutgoingFile) (string, error) {
	chID := postChannel(f.Target)
	if chID == "" {
		return "", channels.Permanent(errors.New("discord: send file: empty target"))
	}
	if len(f.Data) > MaxUpload {
		return "", channels.Permanent(fmt.Errorf("discord: %s is %d bytes; the limit is %d", f.Name, len(f.Data), MaxUpload))
	}
	name := f.Name
	if strings.TrimSpace(name) == "" {
		name = "file"
	}
	caption := []rune(f.Caption)
	if len(caption) > ChunkLimit {
		caption = caption[:ChunkLimit]
	}
	data := &discordgo.MessageSend{Content: string(caption), AllowedMentions: allowedMentions()}
	if f.ReplyTo != "" && !c.isDM(chID) {
		no := false
		data.Reference = &discordgo.MessageReference{MessageID: f.ReplyTo, ChannelID: chID, FailIfNotExists: &no}
	}
	body := sendBody{MessageSend: data, Nonce: discordNonce(f.Nonce)}
	body.EnforceNonce = body.Nonce != ""
	endpoint := discordgo.EndpointChannelMessages(chID)
	var msg discordgo.Message
	err := c.do(ctx, "send file", false, func(opts ...discordgo.RequestOption) error {
		ct, payload, err := discordgo.MultipartBodyWithJSON(body, []*discordgo.File{{Name: name, ContentType: f.MIME,
			Reader: bytes.NewReader(f.Data)}})
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		resp, err := c.rest.RequestRaw(http.MethodPost, endpoint, ct, payload, endpoint, 0, opts...)
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
		return "", channels.Ambiguous(errors.New("discord: send file: response carried no message id"))
	}
	return msg.ID, nil
}
