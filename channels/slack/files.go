package slack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels"
)

// Files back to the chat (send_file) through Slack's external upload flow
// (files.upload is retired): files.getUploadURLExternal, the bytes POSTed to
// the URL it returns, then files.completeUploadExternal, which shares the
// file into the channel (thread_ts for a thread) with the caption as its
// initial comment. The three calls are the steps of slack-go's
// UploadFileContext, made one by one so a failure is classified by step:
// nothing shows in the chat before the completion, so only a completion
// that may have reached Slack is ambiguous. Slack has no idempotency key
// for uploads: a resend after a crash during the completion may show the
// file twice (the one window DESIGN.md allows).

// MaxUpload is Slack's file size limit (1 GB).
const MaxUpload = 1 << 30

var _ channels.FileSender = (*Adapter)(nil)

// MaxFileSize implements channels.FileSender.
func (c *Adapter) MaxFileSize() int64 { return MaxUpload }

// SendFile implements channels.FileSender; it returns the file's id.
func (c *Adapter) SendFile(ctx context.Context, f channels.OutgoingFile) (string, error) {
	if f.Target.ChatID == "" {
		return "", channels.Permanent(errors.New("slack: send file: no channel id"))
	}
	if len(f.Data) == 0 {
		return "", channels.Permanent(errors.New("slack: send file: empty file (Slack refuses those)"))
	}
	if len(f.Data) > MaxUpload {
		return "", channels.Permanent(fmt.Errorf("slack: %s is %d bytes; the limit is %d", f.Name, len(f.Data), MaxUpload))
	}
	name := f.Name
	if strings.TrimSpace(name) == "" {
		name = "file"
	}
	up, err := c.api.GetUploadURLExternalContext(ctx, slackapi.GetUploadURLExternalParameters{FileName: name, FileSize: len(f.Data)})
	if err != nil {
		return "", classify(ctx, "files.getUploadURLExternal", err, false, false)
	}
	err = c.api.UploadToURL(ctx, slackapi.UploadToURLParameters{UploadURL: up.UploadURL, Filename: name, Reader: bytes.NewReader(f.Data)})
	if err != nil {
		return "", classify(ctx, "upload", err, false, false)
	}
	tctx, written := traceWrites(ctx)
	done, err := c.api.CompleteUploadExternalContext(tctx, slackapi.CompleteUploadExternalParameters{
		Files: []slackapi.FileSummary{{ID: up.FileID, Title: name}}, Channel: f.Target.ChatID,
		InitialComment: f.Caption, ThreadTimestamp: f.Target.ThreadID})
	if err != nil {
		return "", classify(ctx, "files.completeUploadExternal", err, written.Load(), true)
	}
	if len(done.Files) == 0 || done.Files[0].ID == "" {
		return "", channels.Ambiguous(errors.New("slack: files.completeUploadExternal: no file in the answer"))
	}
	return done.Files[0].ID, nil
}
