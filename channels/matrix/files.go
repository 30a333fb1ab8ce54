package matrix

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/switchboard-bot/switchboard/channels"
)

// Files back to the chat (send_file), as mautrix clients send them: the
// bytes go to the media repository (POST /_matrix/media/v3/upload), then an
// m.image (for images) or m.file event names the mxc:// URI with the file
// name, its type and size, the caption as its body. The event's
// transaction id comes from the delivery's nonce like a chunk's, so a
// resend after a crash is the same event; an upload repeated by that resend
// only leaves an unused copy in the media repository.

// MaxUpload is the upload limit assumed: Synapse's default max_upload_size
// (50 MiB); a homeserver configured lower refuses with 413, which is
// reported in the chat.
const MaxUpload = 50 << 20

var _ channels.FileSender = (*Adapter)(nil)

// MaxFileSize implements channels.FileSender.
func (a *Adapter) MaxFileSize() int64 { return MaxUpload }

// SendFile implements channels.FileSender; it returns the event id.
func (a *Adapter) SendFile(ctx context.Context, f channels.OutgoingFile) (string, error) {
	if f.Target.ChatID == "" {
		return "", channels.Permanent(errors.New("matrix: send file: no room"))
	}
	name := f.Name
	if strings.TrimSpace(name) == "" {
		name = "file"
	}
	cctx, cancel := context.WithTimeout(ctx, a.opts.RequestTimeout)
	up, err := a.cli.UploadBytesWithName(cctx, f.Data, f.MIME, name)
	cancel()
	if err != nil {
		return "", classify(ctx, fmt.Errorf("matrix: upload %s: %w", name, err), true)
	}
	msgtype := "m.file"
	if strings.HasPrefix(f.MIME, "image/") {
		msgtype = "m.image"
	}
	body := f.Caption
	if strings.TrimSpace(body) == "" {
		body = name
	}
	c := map[string]any{"msgtype": msgtype, "body": body, "filename": name, "url": up.ContentURI.String(),
		"info": map[string]any{"mimetype": f.MIME, "size": len(f.Data)}, "m.mentions": map[string]any{}}
	if f.Target.ThreadID != "" {
		c["m.relates_to"] = map[string]any{"rel_type": "m.thread", "event_id": f.Target.ThreadID,
			"is_falling_back": true, "m.in_reply_to": map[string]any{"event_id": f.Target.ThreadID}}
	}
	idempotent := f.Nonce != ""
	txn := randomTxn()
	if idempotent {
		salt, err := a.txnSalt(ctx)
		if err != nil {
			return "", channels.Temporary(fmt.Errorf("matrix: send file: %w", err))
		}
		txn = txnID(salt, f.Nonce)
	}
	cctx, cancel = context.WithTimeout(ctx, a.opts.RequestTimeout)
	defer cancel()
	resp, err := a.cli.SendMessageEvent(cctx, id.RoomID(f.Target.ChatID), eventMessage, c, mautrix.ReqSendEvent{TransactionID: txn})
	if err != nil {
		return "", classify(ctx, err, idempotent)
	}
	a.noteSent(string(resp.EventID))
	return string(resp.EventID), nil
}
