package agent

import (
	"context"
	"strings"

	"github.com/switchboard-bot/switchboard/memory"
)

// Attachments in a turn (issue 32).
//
// With Options.Media set, a turn's attachments go through the preparer
// before the first model call: voice notes come back as their transcript,
// documents as an excerpt, images unchanged. The prepared text joins the
// user's words, so the session keeps the transcript (the stored message is
// what the model saw); the attachment files are staged in the turn's
// workspace overlay and committed with the turn. What the preparer could not
// use comes back as notices, added to the answer (like FilesNotSaved), so
// the user hears why once, and the turn is answered all the same. A
// replayed turn prepares its attachments again from the inbox.

// MediaPreparer turns attachments into model input (agent/media).
type MediaPreparer interface {
	// PrepareMedia never fails: what it cannot use is a notice. save
	// stores a file in the chat's workspace (nil: no workspace).
	PrepareMedia(ctx context.Context, in []Media, save SaveFile) PreparedMedia
}

// SaveFile stores data at path in the turn's chat workspace.
type SaveFile func(ctx context.Context, path string, data []byte) error

// PreparedMedia is a turn's attachments as model input.
type PreparedMedia struct {
	// Text joins the user's words (transcripts, document excerpts, notes
	// on attachments that are not read), each part marked as what it is.
	Text string
	// Media are given to the model as they are (images).
	Media []Media
	// Notices are lines added to the answer (one each, however many
	// attachments they concern).
	Notices []string
	// Spoke: a voice note was transcribed (the chat spoke).
	Spoke bool
}

// userMessage is the turn's user message, with its attachments prepared
// (t.req.Media becomes what the model still gets as media).
func (t *turn) userMessage(ctx context.Context) memory.Message {
	user := memory.Message{Role: memory.RoleUser, Content: t.req.Text, Name: t.req.Runtime.SenderName, Time: t.started}
	if r := t.req.Received; !r.IsZero() && r.Before(t.started) {
		user.Time = r // accepted before the turn began: it waited in the queue
	}
	for _, m := range t.req.Media {
		user.Media = append(user.Media, memory.MediaRef{MIME: m.MIME, Name: m.Name, Size: len(m.Data)})
	}
	if t.o.Media == nil || len(t.req.Media) == 0 {
		return user
	}
	p := t.o.Media.PrepareMedia(ctx, t.req.Media, t.saveFile())
	t.req.Media = p.Media
	t.mediaNotices = p.Notices
	t.spoke = p.Spoke
	if p.Spoke {
		t.emit(Event{Kind: EventSpoke})
	}
	if p.Text != "" {
		if strings.TrimSpace(user.Content) == "" {
			user.Content = p.Text
		} else {
			user.Content += "\n\n" + p.Text
		}
	}
	return user
}

// saveFile stages a file in the turn's workspace overlay (nil without one).
func (t *turn) saveFile() SaveFile {
	files := t.callInfo.Files
	if files == nil {
		return nil
	}
	return func(ctx context.Context, path string, data []byte) error {
		_, err := files.Write(ctx, path, data, 0o644)
		return err
	}
}

// withMediaNotices adds the attachments' notices to the answer.
func (t *turn) withMediaNotices(text string) string {
	if len(t.mediaNotices) == 0 {
		return text
	}
	note := strings.Join(t.mediaNotices, "\n")
	if strings.TrimSpace(text) == "" {
		return note
	}
	return text + "\n\n" + note
}
