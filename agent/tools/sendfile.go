package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/memory"
)

// send_file (issue 31): a workspace file back to the chat as an attachment.
//
// The tool does not send. It reads the file as the turn sees it (the
// overlay, agent.CallInfo.Files), and hands it to the turn's FileQueue, which
// the chat handler puts into a chat turn's context (WithFileQueue). The
// queue checks what it can before the answer (the platform takes files at
// all, the file fits the platform's limit, at most a few files a turn) and
// refuses with an error the model reads and can explain. What it accepts is
// recorded with the turn's commit and delivered after the answer text, each
// file with its own outbox intent and receipt (channels/outbound, files.go).
//
// A turn without a queue (a job, the heartbeat, `switchboard ask`) answers
// no chat: the tool refuses and the model can name the file's path instead.

// NameSendFile is the send_file tool's name.
const NameSendFile = "send_file"

// MaxCaption bounds a file's caption (Telegram's caption limit).
const MaxCaption = 1024

// QueuedFile is a file send_file queued: the content read when the tool ran
// (Data), and what identifies that version (SHA256, Size).
type QueuedFile struct {
	Path    string // canonical workspace path
	Name    string // base name, what the chat shows
	MIME    string
	Size    int64
	SHA256  string // hex, of Data
	Caption string
	Data    []byte
}

// FileQueue takes the files a chat turn sends. QueueFile's error goes to
// the model as the tool's result (permanent: not retried).
type FileQueue interface {
	QueueFile(ctx context.Context, f QueuedFile) error
}

type fileQueueKey struct{}

// WithFileQueue returns ctx carrying the queue of a chat turn.
func WithFileQueue(ctx context.Context, q FileQueue) context.Context {
	return context.WithValue(ctx, fileQueueKey{}, q)
}

// FileQueueFrom returns the chat turn's queue, if any.
func FileQueueFrom(ctx context.Context) (FileQueue, bool) {
	q, ok := ctx.Value(fileQueueKey{}).(FileQueue)
	return q, ok && q != nil
}

// DetectMIME is a file's content type: by its extension when known, else by
// content sniffing.
func DetectMIME(name string, data []byte) string {
	if t := mime.TypeByExtension(strings.ToLower(path.Ext(name))); t != "" {
		return t
	}
	return http.DetectContentType(data[:min(len(data), binarySniffPrefix)])
}

type sendFileArgs struct {
	Path    string `json:"path" jsonschema:"The workspace path of the file to send (for example reports/q3.pdf)."`
	Caption string `json:"caption,omitempty" jsonschema:"A short text shown with the file. Optional."`
}

var sendFileSchema = sync.OnceValue(func() json.RawMessage {
	return agent.MustArgsSchema[sendFileArgs](func(p map[string]*jsonschema.Schema) {
		p["path"].MaxLength = jsonschema.Ptr(memory.MaxPathBytes)
		p["caption"].MaxLength = jsonschema.Ptr(MaxCaption)
	})
})

// SendFile is the send_file tool.
type SendFile struct{}

// NewSendFile returns the send_file tool.
func NewSendFile() *SendFile { return &SendFile{} }

// Name implements agent.Tool.
func (*SendFile) Name() string { return NameSendFile }

// Description implements agent.Tool.
func (*SendFile) Description() string {
	return "Send a file of this chat's workspace to the chat as an attachment (a document, or a photo for images). " +
		"It is delivered once, after your answer; do not paste its content into the answer. Write the file first."
}

// Schema implements agent.Tool.
func (*SendFile) Schema() json.RawMessage { return sendFileSchema() }

// Call implements agent.Tool.
func (*SendFile) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	var a sendFileArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", agent.Permanent(fmt.Errorf("%s: %w", NameSendFile, err))
	}
	if len(a.Caption) > MaxCaption {
		return "", agent.Permanent(fmt.Errorf("%s: the caption is %d bytes; at most %d", NameSendFile, len(a.Caption), MaxCaption))
	}
	q, ok := FileQueueFrom(ctx)
	if !ok {
		return "", agent.Permanent(errors.New(NameSendFile + ": this turn answers no chat (a job or a direct request), so no file can be sent; name the file's workspace path instead"))
	}
	files, err := turnFiles(ctx, NameSendFile)
	if err != nil {
		return "", err
	}
	data, fi, err := files.Read(ctx, a.Path)
	if err != nil {
		return "", fileErr(NameSendFile, err)
	}
	sum := sha256.Sum256(data)
	f := QueuedFile{Path: fi.Path, Name: path.Base(fi.Path), Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]),
		Caption: strings.TrimSpace(a.Caption), Data: data}
	f.MIME = DetectMIME(f.Name, data)
	if err := q.QueueFile(ctx, f); err != nil {
		return "", agent.Permanent(fmt.Errorf("%s: %w", NameSendFile, err))
	}
	return fmt.Sprintf("%s (%s, %s) will be sent to the chat as an attachment after your answer.",
		f.Path, memory.FormatBytes(f.Size), f.MIME), nil
}
