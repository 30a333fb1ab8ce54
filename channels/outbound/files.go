package outbound

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/memory"
)

// Files back to the chat (send_file, issue 31).
//
// A file a turn sends is recorded with the turn: its intent — an outbox
// record of the turn at chunk FileChunkBase+i whose Text is the FilePlan
// (path, SHA256, size, name, type, caption) as JSON — is committed in the
// turn's own transaction (channels/hub, commit.go). The content is not
// copied into the outbox: it is in the workspace, committed in the same
// transaction. After the answer text, DeliverFiles sends the files in order,
// each one a platform call (channels.FileSender) followed by its receipt on
// its intent, so:
//
//   - a crash before a file's receipt leaves its intent pending: the replay
//     at start (PendingFiles) sends exactly the files without a receipt, with
//     the same nonce (Discord's nonce, Matrix's transaction id make that
//     resend idempotent; elsewhere it is the one window a duplicate may
//     occur in, counted as a resend like an answer chunk's);
//   - the version delivered is the one the tool read: the first run sends
//     the bytes it read; a replay reads the workspace and sends the file only
//     when its SHA256 is still the recorded one — a file changed since is
//     not sent, and the chat is told so (the workspace keeps one version);
//   - a file over the platform's limit (FileSender.MaxFileSize), a platform
//     that takes no files, a file no longer in the workspace or one the
//     platform refused is not retried: the chat gets one message saying so,
//     with the file's workspace path; that message is an outbox delivery of
//     its own (turn id TurnID+"/file"+i), so a replay does not repeat it,
//     and the intent is then marked failed.

// FileChunkBase is the first outbox chunk number of a turn's files; the
// answer's chunks are numbered from 0 and never come near it.
const FileChunkBase = 1 << 20

// IsFileChunk reports whether an outbox record's chunk number is a file's.
func IsFileChunk(chunk int) bool { return chunk >= FileChunkBase }

// FilePlan is what a file's outbox intent records (OutboxRecord.Text, JSON).
type FilePlan struct {
	Path    string `json:"path"`
	Name    string `json:"name"`
	MIME    string `json:"mime"`
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"`
	Caption string `json:"caption,omitempty"`
}

// FileIntent is the outbox intent of file i of a turn.
func FileIntent(target, turnID string, i int, p FilePlan) memory.OutboxRecord {
	b, _ := json.Marshal(p) // strings and an int: cannot fail
	return memory.OutboxRecord{Target: target, TurnID: turnID, Chunk: FileChunkBase + i, Text: string(b),
		Status: memory.OutboxPending}
}

// OutFile is one file of a FileDelivery.
type OutFile struct {
	Index  int // i of the intent's chunk FileChunkBase+i
	Plan   FilePlan
	Intent uint64 // the intent's record id; 0: recorded before the send
	Data   []byte // the content the tool read; nil: read through FileDelivery.Read
	Resend bool   // the intent is from an earlier run and has no receipt
}

// FileDelivery is the files of one turn to deliver after its answer.
type FileDelivery struct {
	Target  channels.Target
	ReplyTo string
	TurnID  string
	Files   []OutFile
	// Read returns a file's current content in the chat's workspace, for a
	// file without Data (a replay); an error wrapping fs.ErrNotExist means
	// the file is gone.
	Read func(ctx context.Context, path string) ([]byte, error)
}

// PendingFiles returns the files of turnID's for target whose intents have
// no receipt, in order (the replay after a crash).
func (o *Outbound) PendingFiles(ctx context.Context, turnID string, target channels.Target) ([]OutFile, error) {
	if o.outbox == nil || turnID == "" {
		return nil, nil
	}
	recs, err := o.outbox.OutboxForTurn(ctx, turnID)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	newest := map[int]memory.OutboxRecord{} // a turn run again recorded its files again
	for _, r := range recs {
		if IsFileChunk(r.Chunk) && r.Target == target.String() && r.ID > newest[r.Chunk].ID {
			newest[r.Chunk] = r
		}
	}
	var out []OutFile
	for _, r := range newest {
		if r.Status != memory.OutboxPending {
			continue
		}
		var p FilePlan
		if err := json.Unmarshal([]byte(r.Text), &p); err != nil {
			o.log.Error("unreadable file intent; not sending it", "turn", turnID, "record", r.ID, "err", err)
			continue
		}
		out = append(out, OutFile{Index: r.Chunk - FileChunkBase, Plan: p, Intent: r.ID, Resend: true})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// DeliverFiles sends d's files through ch in order (see the comment above).
// It returns an error only when the outbox cannot record an intent (the
// caller retries while the store cannot write) or ctx ended; every other
// failure is told in the chat.
func (o *Outbound) DeliverFiles(ctx context.Context, ch channels.Channel, d FileDelivery) error {
	for _, f := range d.Files {
		if err := o.deliverFile(ctx, ch, d, f); err != nil {
			return err
		}
	}
	return nil
}

func (o *Outbound) deliverFile(ctx context.Context, ch channels.Channel, d FileDelivery, f OutFile) error {
	data, note := o.fileContent(ctx, d, f)
	fsend, ok := ch.(channels.FileSender)
	switch {
	case note != "":
	case !ok:
		note = fmt.Sprintf("I could not send %s: files cannot be sent on %s.", f.Plan.Name, PlatformTitle(ch.Name()))
	case fsend.MaxFileSize() > 0 && int64(len(data)) > fsend.MaxFileSize():
		note = fmt.Sprintf("%s is %s; %s bots can send at most %s.", f.Plan.Name, memory.FormatBytes(int64(len(data))),
			PlatformTitle(ch.Name()), memory.FormatBytes(fsend.MaxFileSize()))
	}
	if note != "" {
		return o.refuseFile(ctx, ch, d, f, note+" It is in this chat's workspace as "+f.Plan.Path+".")
	}
	if p, ok := ch.(channels.Pacer); ok {
		if err := p.WaitSendSlot(ctx, d.Target); err != nil {
			return fmt.Errorf("send %s to %s: %w", f.Plan.Name, d.Target, err)
		}
	}
	id := f.Intent
	if id == 0 && o.outbox != nil && d.TurnID != "" {
		var err error
		if id, err = o.outbox.OutboxIntent(ctx, FileIntent(d.Target.String(), d.TurnID, f.Index, f.Plan)); err != nil {
			return fmt.Errorf("record file intent: %w", err)
		}
	}
	if f.Resend {
		o.countResend(Delivery{Target: d.Target, TurnID: d.TurnID}, FileChunkBase+f.Index, "file")
	}
	out := channels.OutgoingFile{Target: d.Target, Name: f.Plan.Name, Path: f.Plan.Path, MIME: f.Plan.MIME, Data: data,
		Caption: f.Plan.Caption, Nonce: nonce(d.TurnID, FileChunkBase+f.Index), ReplyTo: d.ReplyTo}
	pid, attempts, err := o.retry(ctx, func(ctx context.Context) (string, error) { return fsend.SendFile(ctx, out) })
	if err != nil && ctx.Err() != nil {
		// Shutdown: the intent stays pending and the replay sends it.
		return fmt.Errorf("send %s to %s: %w", f.Plan.Name, d.Target, err)
	}
	status := memory.OutboxDelivered
	errText := ""
	if err != nil {
		status, errText = memory.OutboxFailed, oneLineErr(err)
		o.failed.Add(1)
		o.obs.Delivery("failed")
		o.logFailure(ctx, "send_file", Delivery{Target: d.Target, TurnID: d.TurnID}, FileChunkBase+f.Index, attempts, err)
	} else {
		o.sent.Add(1)
		o.obs.ChunkSent(d.Target.Channel)
	}
	if id != 0 && o.outbox != nil {
		if rerr := o.outbox.OutboxResult(context.WithoutCancel(ctx), id, status, pid, errText); rerr != nil {
			o.log.Error("record file receipt", "err", rerr, "turn", d.TurnID, "file", f.Plan.Path)
		}
	}
	if err != nil {
		o.tellFile(ctx, ch, d, f, fmt.Sprintf("I could not send %s: %s refused it. It is in this chat's workspace as %s.",
			f.Plan.Name, PlatformTitle(ch.Name()), f.Plan.Path))
	}
	return nil
}

// fileContent is the file's content, or the note that tells the chat why
// there is none to send.
func (o *Outbound) fileContent(ctx context.Context, d FileDelivery, f OutFile) ([]byte, string) {
	if f.Data != nil {
		return f.Data, ""
	}
	if d.Read == nil {
		return nil, fmt.Sprintf("I could not send %s: this chat's files cannot be read here.", f.Plan.Name)
	}
	data, err := d.Read(ctx, f.Plan.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Sprintf("I could not send %s: it is no longer in this chat's workspace.", f.Plan.Name)
	case err != nil:
		o.log.Error("read a file to send", "turn", d.TurnID, "file", f.Plan.Path, "err", err)
		return nil, fmt.Sprintf("I could not send %s: its content could not be read.", f.Plan.Name)
	}
	sum := sha256.Sum256(data)
	if f.Plan.SHA256 != "" && hex.EncodeToString(sum[:]) != f.Plan.SHA256 {
		return nil, fmt.Sprintf("I did not send %s: it changed after the answer that sent it. Ask for it again to get the current version.", f.Plan.Name)
	}
	return data, ""
}

// refuseFile tells the chat why a file is not sent and marks its intent
// failed (after the message, so a crash in between tells it again, never
// not at all).
func (o *Outbound) refuseFile(ctx context.Context, ch channels.Channel, d FileDelivery, f OutFile, note string) error {
	o.log.Info("file not sent", "target", d.Target.String(), "turn", d.TurnID, "file", f.Plan.Path, "why", note)
	o.tellFile(ctx, ch, d, f, note)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if f.Intent != 0 && o.outbox != nil {
		if err := o.outbox.OutboxResult(context.WithoutCancel(ctx), f.Intent, memory.OutboxFailed, "", note); err != nil {
			o.log.Error("record refused file", "err", err, "turn", d.TurnID, "file", f.Plan.Path)
		}
	}
	return nil
}

// tellFile delivers note to the chat as a delivery of its own, recorded
// under the file's turn id so a replay does not repeat it.
func (o *Outbound) tellFile(ctx context.Context, ch channels.Channel, d FileDelivery, f OutFile, note string) {
	turn := ""
	if d.TurnID != "" {
		turn = d.TurnID + "/file" + strconv.Itoa(f.Index)
	}
	if _, err := o.Deliver(ctx, ch, Delivery{Target: d.Target, ReplyTo: d.ReplyTo, TurnID: turn, Markdown: note}); err != nil {
		o.log.Warn("could not tell the chat a file was not sent", "target", d.Target.String(), "err", err)
	}
}

// PlatformTitle is a channel's name as people write it ("Telegram").
func PlatformTitle(name string) string {
	switch name {
	case "whatsapp":
		return "WhatsApp"
	case "web":
		return "Web console"
	case "email":
		return "Email"
	case "":
		return "this platform"
	}
	return strings.ToUpper(name[:1]) + name[1:]
}
