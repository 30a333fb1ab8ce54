package console

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

// Files back to the chat (send_file) on the Memory channel: it records each
// file it is given, and a test can hold or fail a file's send (OnSendFile)
// or lower the size limit (SetMaxFileSize).

// DefaultMemoryMaxFile is the Memory channel's file size limit unless set.
const DefaultMemoryMaxFile = 50 << 20

// SentFile is one file the bot sent to a Memory channel.
type SentFile struct {
	ID      string
	Target  channels.Target
	Name    string
	MIME    string
	Data    []byte
	Caption string
	Nonce   string
	ReplyTo string
}

// fileLog is Memory's file state, guarded by Memory.mu.
type fileLog struct {
	sent  []SentFile
	max   int64
	hook  func(ctx context.Context, f channels.OutgoingFile) error
	calls int
}

var _ channels.FileSender = (*Memory)(nil)

// SendFile implements channels.FileSender.
func (m *Memory) SendFile(ctx context.Context, f channels.OutgoingFile) (string, error) {
	m.mu.Lock()
	m.files.calls++
	hook := m.files.hook
	m.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, f); err != nil {
			return "", err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	id := "f" + strconv.Itoa(m.seq)
	m.files.sent = append(m.files.sent, SentFile{ID: id, Target: f.Target, Name: f.Name, MIME: f.MIME,
		Data: slices.Clone(f.Data), Caption: f.Caption, Nonce: f.Nonce, ReplyTo: f.ReplyTo})
	m.cond.Broadcast()
	return id, nil
}

// MaxFileSize implements channels.FileSender.
func (m *Memory) MaxFileSize() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files.max == 0 {
		return DefaultMemoryMaxFile
	}
	return m.files.max
}

// SetMaxFileSize sets the file size limit (0: the default).
func (m *Memory) SetMaxFileSize(n int64) {
	m.mu.Lock()
	m.files.max = n
	m.mu.Unlock()
}

// OnSendFile runs hook before each file is recorded; its error fails the
// send (nothing recorded). A hook may block until ctx ends (a crash).
func (m *Memory) OnSendFile(hook func(ctx context.Context, f channels.OutgoingFile) error) {
	m.mu.Lock()
	m.files.hook = hook
	m.mu.Unlock()
}

// Files returns the files sent to target ("" = everywhere), in order.
func (m *Memory) Files(target string) []SentFile {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.filesLocked(target)
}

// FileCalls is the number of SendFile calls, failed ones included.
func (m *Memory) FileCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.files.calls
}

func (m *Memory) filesLocked(target string) []SentFile {
	var out []SentFile
	for _, f := range m.files.sent {
		if target == "" || f.Target.String() == target {
			out = append(out, f)
		}
	}
	return out
}

// WaitFiles waits until at least n files were sent to target.
func (m *Memory) WaitFiles(t TB, target string, n int, timeout time.Duration) []SentFile {
	t.Helper()
	var got []SentFile
	m.WaitFor(t, target, timeout, fmt.Sprintf("%d file(s)", n), func([]Sent) bool {
		got = m.filesLocked(target)
		return len(got) >= n
	})
	return got
}

// The terminal console is local and its files are in the store, not on
// disk: a file is shown as one line naming it, its size and its workspace
// path (where read_file, exec and /files reach it), the caption after it.

var _ channels.FileSender = (*Terminal)(nil)

// MaxFileSize implements channels.FileSender: nothing is transferred.
func (t *Terminal) MaxFileSize() int64 { return 0 }

// SendFile implements channels.FileSender.
func (t *Terminal) SendFile(_ context.Context, f channels.OutgoingFile) (string, error) {
	line := fmt.Sprintf("[file] %s (%d bytes, %s) — in this chat's workspace as %s", f.Name, len(f.Data), f.MIME, f.Path)
	if f.Caption != "" {
		line += "\n" + f.Caption
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	if l := t.attached[f.Target.ChatID]; l != nil {
		l.Text(line)
		return "out-" + strconv.Itoa(t.seq), nil
	}
	fmt.Fprintf(t.out, "%s\n", line)
	t.showPrompt()
	return "out-" + strconv.Itoa(t.seq), nil
}
