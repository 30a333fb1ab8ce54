package hub

import (
	"context"
	"fmt"
	"sync"

	"github.com/switchboard-bot/switchboard/agent/tools"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/memory"
)

// Files a chat turn sends (send_file, issue 31). Each run of a turn gets a
// fileQueue in its context (tools.WithFileQueue); what the tool queues is
// committed with the turn as outbox intents (commit.go: one per file,
// channels/outbound files.go) and delivered after the answer, before the
// inbox items are cleared — so a crash anywhere in between replays the
// turn's delivery, and only files without a receipt are sent again
// (replayFiles). Without a memory.Lifecycle store the intents are written
// just before each file's send instead.

// maxFilesPerTurn bounds the files one turn sends.
const maxFilesPerTurn = 10

// fileQueue is one turn run's tools.FileQueue; it refuses, with a reason the
// model can relay, what the chat's platform cannot take.
type fileQueue struct {
	ch channels.Channel

	mu    sync.Mutex
	files []tools.QueuedFile
}

func newFileQueue(ch channels.Channel) *fileQueue { return &fileQueue{ch: ch} }

// QueueFile implements tools.FileQueue.
func (q *fileQueue) QueueFile(_ context.Context, f tools.QueuedFile) error {
	platform := outbound.PlatformTitle(q.ch.Name())
	fs, ok := q.ch.(channels.FileSender)
	if !ok {
		return fmt.Errorf("files cannot be sent on %s; %s stays in this chat's workspace: tell the user its path", platform, f.Path)
	}
	if max := fs.MaxFileSize(); max > 0 && f.Size > max {
		return fmt.Errorf("%s is %s; %s bots can send at most %s. It stays in this chat's workspace as %s: tell the user",
			f.Name, memory.FormatBytes(f.Size), platform, memory.FormatBytes(max), f.Path)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, g := range q.files {
		if g.Path == f.Path && g.SHA256 == f.SHA256 {
			q.files[i].Caption = f.Caption // the same file again: sent once
			return nil
		}
	}
	if len(q.files) >= maxFilesPerTurn {
		return fmt.Errorf("at most %d files can be sent with one answer", maxFilesPerTurn)
	}
	q.files = append(q.files, f)
	return nil
}

// queued returns the files queued so far (nil on a nil queue).
func (q *fileQueue) queued() []tools.QueuedFile {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]tools.QueuedFile(nil), q.files...)
}

func planOf(f tools.QueuedFile) outbound.FilePlan {
	return outbound.FilePlan{Path: f.Path, Name: f.Name, MIME: f.MIME, Size: f.Size, SHA256: f.SHA256, Caption: f.Caption}
}

// fileIntents are the outbox intents of the queued files, for the commit.
func fileIntents(key, turnID string, files []tools.QueuedFile) []memory.OutboxRecord {
	out := make([]memory.OutboxRecord, len(files))
	for i, f := range files {
		out[i] = outbound.FileIntent(key, turnID, i, planOf(f))
	}
	return out
}

// outFiles pairs the queued files with their committed intents (ids nil or
// short: the intents are written at delivery).
func outFiles(files []tools.QueuedFile, ids []uint64) []outbound.OutFile {
	out := make([]outbound.OutFile, len(files))
	for i, f := range files {
		out[i] = outbound.OutFile{Index: i, Plan: planOf(f), Data: f.Data}
		if i < len(ids) {
			out[i].Intent = ids[i]
		}
	}
	return out
}

// workspaceReader reads the chat's committed files (a replay's content).
func (h *Handler) workspaceReader(key string) func(ctx context.Context, path string) ([]byte, error) {
	ws, ok := h.store.(memory.Workspace)
	if !ok {
		return nil
	}
	return func(ctx context.Context, path string) ([]byte, error) {
		data, _, err := ws.ReadFile(ctx, key, path)
		return data, err
	}
}

// deliverFiles sends a turn's files after its answer, retrying while the
// store cannot record an intent. It reports false when the delivery was cut
// short (shutdown): the inbox items then stay for the replay.
func (h *Handler) deliverFiles(ctx context.Context, ch channels.Channel, target channels.Target, replyTo, turnID string, files []outbound.OutFile) bool {
	if len(files) == 0 {
		return true
	}
	d := outbound.FileDelivery{Target: target, ReplyTo: replyTo, TurnID: turnID, Files: files,
		Read: h.workspaceReader(target.String())}
	err := h.storageRetry(ctx, opDeliver, func(ctx context.Context) error {
		return h.out.DeliverFiles(ctx, ch, d)
	})
	if err != nil {
		if ctx.Err() != nil || memory.IsStorageError(err) {
			h.log.Info("files not delivered before shutdown; they are sent at the next start", "turn", turnID)
			return false
		}
		h.log.Error("file delivery failed", "turn", turnID, "target", target.String(), "err", err)
	}
	return true
}

// replayAnswered delivers a committed turn found in the inbox at start: the
// answer chunks and the files that have no receipt yet.
func (h *Handler) replayAnswered(first item, batch []item) {
	target := first.msg.Target()
	files, err := h.out.PendingFiles(context.WithoutCancel(h.baseCtx), first.turnID, target)
	if err != nil {
		h.log.Error("read a turn's files to send; sending its answer only", "turn", first.turnID, "err", err)
	}
	h.deliverThen(first.msg, outbound.Delivery{Target: target, ReplyTo: replyTo(first.msg), TurnID: first.turnID,
		Markdown: first.answer, Done: ids(batch)}, batch, files)
}
