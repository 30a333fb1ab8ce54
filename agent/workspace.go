package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

// The chat's workspace inside a turn (issue 31).
//
// Every turn of a chat that has a workspace store (Options.Workspace) gets a
// TurnFiles: an overlay over the chat's stored files, reached by tools
// through CallInfo.Files. Tools never write the store themselves: they stage
// writes and deletes in the overlay, and the turn's commit carries the staged
// change (memory.Turn.Files) into the store in the turn's own transaction.
// So:
//
//   - within the turn, List and Read see the staged state (a file written by
//     one call is read by the next);
//   - a crash before the commit leaves nothing of the turn's files behind,
//     and the inbox replay runs the turn again over the files as they were;
//   - every bound is checked when a tool stages a change (the tool's error
//     names the bound, the model can react) and once more just before the
//     commit against the store as it is then (Settle); if the change no
//     longer fits, the turn commits without it and its answer says so
//     (FilesNotSaved), never a wedged session;
//   - a canceled turn (/stop, shutdown) keeps what it staged, as it keeps its
//     messages; a turn that failed without running a tool commits nothing.
//
// Later tools build on the same overlay: exec materializes List/Read into a
// directory and stages what the command changed with Apply (one change,
// checked whole); send_file reads with Read. A background task's turn runs
// on a session of its own but works in its chat's workspace
// (DirectOptions.FilesOf): its overlay is over the chat's files and its
// commit (memory.Turn.FilesOf) changes them, within the chat's bounds. Work
// outside a turn (attachments saved by the hub) writes through
// memory.Workspace's ApplyFiles directly.

// WorkspaceStore is the read side of the chat's stored files;
// memory.Workspace implements it.
type WorkspaceStore interface {
	ListFiles(ctx context.Context, chat string) ([]memory.FileInfo, error)
	ReadFile(ctx context.Context, chat, path string) ([]byte, memory.FileInfo, error)
}

// FilesNotSaved starts the line added to an answer whose file changes were
// dropped at commit.
const FilesNotSaved = "Files not saved:"

// TurnFiles is one turn's overlay over its chat's workspace. It is safe for
// concurrent use (tool calls of one step run in parallel).
type TurnFiles struct {
	store  WorkspaceStore
	chat   string
	limits memory.WorkspaceLimits
	now    func() time.Time

	mu     sync.Mutex
	staged map[string]*stagedFile
}

// stagedFile is a write (data, info) or a delete (deleted).
type stagedFile struct {
	deleted bool
	data    []byte
	info    memory.FileInfo
}

// NewTurnFiles returns an empty overlay over chat's files in store. limits
// are the bounds (zero fields: the defaults); now stamps staged records.
func NewTurnFiles(store WorkspaceStore, chat string, limits memory.WorkspaceLimits, now func() time.Time) *TurnFiles {
	if now == nil {
		now = time.Now
	}
	return &TurnFiles{store: store, chat: chat, limits: limits.WithDefaults(), now: now, staged: map[string]*stagedFile{}}
}

// Chat is the session key whose files these are.
func (f *TurnFiles) Chat() string { return f.chat }

// Limits are the bounds the overlay checks (the defaults on a nil overlay).
func (f *TurnFiles) Limits() memory.WorkspaceLimits {
	if f == nil {
		return memory.WorkspaceLimits{}.WithDefaults()
	}
	return f.limits
}

// List returns the files as the turn sees them (stored, with the staged
// changes), ordered by path.
func (f *TurnFiles) List(ctx context.Context) ([]memory.FileInfo, error) {
	stored, err := f.store.ListFiles(ctx, f.chat)
	if err != nil {
		return nil, fmt.Errorf("list files: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mergeLocked(stored), nil
}

func (f *TurnFiles) mergeLocked(stored []memory.FileInfo) []memory.FileInfo {
	out := make([]memory.FileInfo, 0, len(stored)+len(f.staged))
	for _, fi := range stored {
		if _, ok := f.staged[fi.Path]; !ok {
			out = append(out, fi)
		}
	}
	for _, s := range f.staged {
		if !s.deleted {
			out = append(out, s.info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Read returns a file's content and record as the turn sees it. path is
// cleaned (memory.CleanPath); a missing file wraps fs.ErrNotExist.
func (f *TurnFiles) Read(ctx context.Context, path string) ([]byte, memory.FileInfo, error) {
	p, err := memory.CleanPath(path)
	if err != nil {
		return nil, memory.FileInfo{}, err
	}
	f.mu.Lock()
	s, ok := f.staged[p]
	f.mu.Unlock()
	if ok {
		if s.deleted {
			return nil, memory.FileInfo{}, memory.NotFoundFile(p)
		}
		return slices.Clone(s.data), s.info, nil
	}
	data, fi, err := f.store.ReadFile(ctx, f.chat, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, memory.FileInfo{}, memory.NotFoundFile(p)
	}
	return data, fi, err
}

// Write stages one file (path cleaned, mode's exec bit kept) and returns its
// record; a bound it would break is a *memory.BoundError and nothing is
// staged.
func (f *TurnFiles) Write(ctx context.Context, path string, data []byte, mode fs.FileMode) (memory.FileInfo, error) {
	p, err := memory.CleanPath(path)
	if err != nil {
		return memory.FileInfo{}, err
	}
	if err := f.Apply(ctx, memory.WorkspaceChange{Writes: []memory.FileWrite{{Path: p, Content: data, Mode: mode}}}); err != nil {
		return memory.FileInfo{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.staged[p].info, nil
}

// Delete stages the removal of a file; a file the turn does not see is an
// error wrapping fs.ErrNotExist.
func (f *TurnFiles) Delete(ctx context.Context, path string) error {
	p, err := memory.CleanPath(path)
	if err != nil {
		return err
	}
	if _, _, err := f.Read(ctx, p); err != nil {
		return err
	}
	return f.Apply(ctx, memory.WorkspaceChange{Deletes: []string{p}})
}

// Apply stages a whole change (canonical paths, each at most once) after
// checking every bound against the state it would leave; on a refusal
// nothing is staged. Deleting a file that does not exist is not an error.
func (f *TurnFiles) Apply(ctx context.Context, change memory.WorkspaceChange) error {
	change, err := memory.PrepareChange(change)
	if err != nil {
		return err
	}
	stored, err := f.store.ListFiles(ctx, f.chat)
	if err != nil {
		return fmt.Errorf("list files: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	sizes := memory.ResultingSizes(f.mergeLocked(stored), change)
	if err := memory.CheckWorkspace(sizes, change.Writes, f.limits); err != nil {
		return err
	}
	now := f.now()
	for _, d := range change.Deletes {
		f.staged[d] = &stagedFile{deleted: true}
	}
	for _, w := range change.Writes {
		data := slices.Clone(w.Content)
		if data == nil {
			data = []byte{}
		}
		f.staged[w.Path] = &stagedFile{data: data, info: memory.FileRecord(w.Path, data, w.Mode, now)}
	}
	return nil
}

// Change is the staged change (nil when the turn changed no file), paths
// sorted.
func (f *TurnFiles) Change() *memory.WorkspaceChange {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.staged) == 0 {
		return nil
	}
	paths := make([]string, 0, len(f.staged))
	for p := range f.staged {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	c := &memory.WorkspaceChange{}
	for _, p := range paths {
		s := f.staged[p]
		if s.deleted {
			c.Deletes = append(c.Deletes, p)
		} else {
			c.Writes = append(c.Writes, memory.FileWrite{Path: p, Content: s.data, Mode: s.info.Mode})
		}
	}
	return c
}

// Settle returns the change to commit, checked once more against the files
// stored now. A change that no longer fits comes back nil with the reason.
func (f *TurnFiles) Settle(ctx context.Context) (*memory.WorkspaceChange, error) {
	c := f.Change()
	if c == nil {
		return nil, nil
	}
	stored, err := f.store.ListFiles(ctx, f.chat)
	if err != nil {
		// The store cannot be read now; the commit checks again in its
		// own transaction.
		return c, nil
	}
	if err := memory.CheckWorkspace(memory.ResultingSizes(stored, *c), c.Writes, f.limits); err != nil {
		return nil, err
	}
	return c, nil
}

// settleFiles puts the turn's staged file change into turn (memory.Turn.Files)
// and returns the answer, with a line saying why the change was dropped
// when it no longer fits.
func (t *turn) settleFiles(ctx context.Context, text string) string {
	files := t.callInfo.Files
	if files == nil {
		return text
	}
	c, err := files.Settle(ctx)
	if err != nil {
		t.logger().Warn("workspace change dropped at commit", "err", err)
		note := FilesNotSaved + " " + err.Error()
		if strings.TrimSpace(text) == "" {
			return note
		}
		return text + "\n\n" + note
	}
	t.files = c
	return text
}

// newTurnFiles is the turn's overlay, nil without a workspace store.
func (a *Agent) newTurnFiles(key string) *TurnFiles {
	if a.o.Workspace == nil || key == "" {
		return nil
	}
	var limits memory.WorkspaceLimits
	if a.o.WorkspaceLimits != nil {
		limits = a.o.WorkspaceLimits()
	}
	return NewTurnFiles(a.o.Workspace, key, limits, a.o.Now)
}
