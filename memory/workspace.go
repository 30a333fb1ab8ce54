package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The workspace (issue 31): files per chat, kept in the store.
//
// Every chat (session key) has a workspace: regular files the model writes
// with its file tools (and, later, exec writes back), kept in the store like
// the conversation, so a replica that takes over a chat has its files and a
// backup holds them. Decisions every implementation keeps (memory/storetest
// proves them):
//
//   - Paths are relative, slash-separated and canonical (CleanPath): no "..",
//     no leading "/", no empty segment, no "." segment, no NUL, control or
//     format characters, no backslash, at most 255 bytes a segment and 1024
//     in all. One file's path is never another's directory ("a" and "a/b"
//     cannot both exist), so the workspace can always be materialized as a
//     directory tree. There are no symlinks and no directories: only regular
//     files, whose mode keeps the executable bit alone (0644 or 0755).
//   - Bounds (WorkspaceLimits) are checked against the state a change would
//     leave, all of them, before anything is written: a change is applied
//     whole or not at all, and a refusal is a *BoundError naming the bound
//     ("workspace.max_bytes (50 MiB) would be exceeded: …").
//   - A turn's file changes are committed in the turn's own transaction
//     (Turn.Files): a crash before the commit leaves none of them, and the
//     inbox replay runs the turn again from the files as they were. When, at
//     commit, the change no longer fits the bounds (something else wrote the
//     workspace meanwhile), the turn is committed without it rather than
//     failing: a session never wedges on its files. The agent checks the
//     bounds just before the commit and tells the user when it drops a
//     change (agent/workspace.go), so this is a last line of defence.
//   - ResetSession keeps the files (a reset clears the conversation, not the
//     user's files); MoveSession moves them with the session and, like the
//     session, refuses a destination that already has files.
//   - Prune never removes files; they go when the model (or the user)
//     deletes them.

// Workspace bound defaults (DESIGN.md §9: workspace.max_bytes, max_files,
// max_file).
const (
	DefaultWorkspaceMaxBytes = 50 << 20
	DefaultWorkspaceMaxFiles = 1000
	DefaultWorkspaceMaxFile  = 10 << 20
)

// Path bounds (CleanPath).
const (
	MaxPathBytes    = 1024
	MaxSegmentBytes = 255
)

// WorkspaceLimits bound one chat's workspace. A zero field takes its default
// (WithDefaults); a negative one means unbounded (tests, tools).
type WorkspaceLimits struct {
	MaxBytes int64 // all files together (workspace.max_bytes)
	MaxFiles int   // number of files (workspace.max_files)
	MaxFile  int64 // one file (workspace.max_file)
}

// WithDefaults returns l with zero fields set to the defaults.
func (l WorkspaceLimits) WithDefaults() WorkspaceLimits {
	if l.MaxBytes == 0 {
		l.MaxBytes = DefaultWorkspaceMaxBytes
	}
	if l.MaxFiles == 0 {
		l.MaxFiles = DefaultWorkspaceMaxFiles
	}
	if l.MaxFile == 0 {
		l.MaxFile = DefaultWorkspaceMaxFile
	}
	return l
}

// FileInfo is the record of one workspace file.
type FileInfo struct {
	Path     string      `json:"path"`
	Size     int64       `json:"size"`
	SHA256   string      `json:"sha256"` // hex
	Modified time.Time   `json:"modified"`
	Mode     fs.FileMode `json:"mode"` // 0644 or 0755
}

// FileWrite is one file a change creates or replaces. Mode is normalized
// (NormMode); the record's Size, SHA256 and Modified come from the store.
type FileWrite struct {
	Path    string      `json:"path"`
	Content []byte      `json:"content"`
	Mode    fs.FileMode `json:"mode,omitempty"`
}

// WorkspaceChange is a set of writes and deletes applied together. A path is
// written or deleted at most once in a change; deleting a file that does not
// exist is not an error (the change is idempotent, so a replayed commit
// applies cleanly).
type WorkspaceChange struct {
	Writes  []FileWrite `json:"writes,omitempty"`
	Deletes []string    `json:"deletes,omitempty"`
}

// Empty reports whether the change does nothing.
func (c *WorkspaceChange) Empty() bool {
	return c == nil || len(c.Writes) == 0 && len(c.Deletes) == 0
}

// Bytes is the content the change writes.
func (c *WorkspaceChange) Bytes() int64 {
	var n int64
	if c != nil {
		for _, w := range c.Writes {
			n += int64(len(w.Content))
		}
	}
	return n
}

// Workspace is the per-chat file store. chat is a session key.
type Workspace interface {
	// ListFiles returns the records of chat's files, ordered by path.
	ListFiles(ctx context.Context, chat string) ([]FileInfo, error)
	// ReadFile returns one file's content and record; a missing file is an
	// error wrapping ErrNotFound (and fs.ErrNotExist).
	ReadFile(ctx context.Context, chat, path string) ([]byte, FileInfo, error)
	// ApplyFiles writes and deletes the files of change in one transaction,
	// after checking every bound against the resulting state; on a refusal
	// (a *BoundError, or an invalid path) nothing is written.
	ApplyFiles(ctx context.Context, chat string, change WorkspaceChange, limits WorkspaceLimits) error
}

// ErrBound is wrapped by every *BoundError.
var ErrBound = errors.New("workspace bound exceeded")

// BoundError is a change refused by a workspace bound. Its text names the
// bound as the operator configures it.
type BoundError struct {
	Key    string // "workspace.max_bytes", "workspace.max_files", "workspace.max_file"
	Limit  int64
	Detail string // what would exceed it
}

func (e *BoundError) Error() string {
	limit := fmt.Sprintf("%d", e.Limit)
	if e.Key != "workspace.max_files" {
		limit = FormatBytes(e.Limit)
	}
	return fmt.Sprintf("%s (%s) would be exceeded: %s", e.Key, limit, e.Detail)
}

// Unwrap makes errors.Is(err, ErrBound) true.
func (e *BoundError) Unwrap() error { return ErrBound }

// FormatBytes renders n as the config writes sizes: "50 MiB", "1.5 KiB", "12 bytes".
func FormatBytes(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	if n < 1024 && n > -1024 {
		if n == 1 {
			return "1 byte"
		}
		return fmt.Sprintf("%d bytes", n)
	}
	f := float64(n)
	u := ""
	for _, u = range units {
		f /= 1024
		if f < 1024 && f > -1024 {
			break
		}
	}
	s := fmt.Sprintf("%.1f", f)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + u
}

// NormMode is the mode a file is kept with: 0755 when any executable bit is
// set, else 0644.
func NormMode(m fs.FileMode) fs.FileMode {
	if m&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// CleanPath returns the canonical form of a workspace path, or an error
// naming what is wrong with it. It is the one path rule of the workspace:
// the store, the file tools, exec's write-back and the console all call it.
//
// Accepted: a relative, slash-separated path; a leading "./", "." segments
// and doubled slashes are cleaned away ("./a//b" → "a/b"). Refused: an
// empty path, an absolute one, any ".." segment (even one that would stay
// inside: "a/../b" is ambiguous about symlinks and never needed), a
// backslash, NUL, control characters and Unicode format characters
// (bidirectional overrides, zero-width joiners: names that look like other
// names), invalid UTF-8, a segment over 255 bytes, over 1024 bytes in all.
func CleanPath(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if !utf8.ValidString(p) {
		return "", fmt.Errorf("path %q is not valid UTF-8", p)
	}
	for _, r := range p {
		switch {
		case r == 0 || r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return "", fmt.Errorf("path %q contains a control character", p)
		case r == '\\':
			return "", fmt.Errorf("path %q contains a backslash; use / between directories", p)
		case unicode.Is(unicode.Cf, r) || r == utf8.RuneError:
			return "", fmt.Errorf("path %q contains an invisible formatting character (U+%04X)", p, r)
		}
	}
	if strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q is absolute; workspace paths are relative (e.g. notes/todo.md)", p)
	}
	var segs []string
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "", ".":
			continue
		case "..":
			return "", fmt.Errorf("path %q contains \"..\"; workspace paths stay inside the workspace", p)
		}
		if strings.TrimSpace(s) == "" {
			return "", fmt.Errorf("path %q has a segment of only spaces", p)
		}
		if len(s) > MaxSegmentBytes {
			return "", fmt.Errorf("path %.60q…: a name is longer than %d bytes", p, MaxSegmentBytes)
		}
		segs = append(segs, s)
	}
	if len(segs) == 0 {
		return "", fmt.Errorf("path %q names the workspace itself, not a file", p)
	}
	out := strings.Join(segs, "/")
	if len(out) > MaxPathBytes {
		return "", fmt.Errorf("path %.60q…: longer than %d bytes", p, MaxPathBytes)
	}
	return out, nil
}

// FileRecord is the record of content written at path with mode at t.
func FileRecord(path string, content []byte, mode fs.FileMode, t time.Time) FileInfo {
	sum := sha256.Sum256(content)
	return FileInfo{Path: path, Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:]),
		Modified: t.UTC(), Mode: NormMode(mode)}
}

// PrepareChange validates change: every path canonical (CleanPath, exactly:
// a store does not rewrite what it is given), no path twice, Mode
// normalized. It returns the change with normalized modes.
func PrepareChange(change WorkspaceChange) (WorkspaceChange, error) {
	seen := make(map[string]bool, len(change.Writes)+len(change.Deletes))
	check := func(p string) error {
		c, err := CleanPath(p)
		if err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
		if c != p {
			return fmt.Errorf("workspace: path %q is not canonical (%q)", p, c)
		}
		if seen[p] {
			return fmt.Errorf("workspace: path %q appears twice in one change", p)
		}
		seen[p] = true
		return nil
	}
	out := WorkspaceChange{Writes: make([]FileWrite, 0, len(change.Writes)), Deletes: change.Deletes}
	for _, w := range change.Writes {
		if err := check(w.Path); err != nil {
			return WorkspaceChange{}, err
		}
		w.Mode = NormMode(w.Mode)
		out.Writes = append(out.Writes, w)
	}
	for _, d := range change.Deletes {
		if err := check(d); err != nil {
			return WorkspaceChange{}, err
		}
	}
	return out, nil
}

// CheckWorkspace checks a workspace's resulting state against limits: its
// files (path → size, after the change) and the sizes the change writes.
// It returns a *BoundError naming the first bound broken (max_file, then
// max_files, then max_bytes), or an error when one file's path is another's
// directory. Stores call it inside their transaction; the agent's overlay
// calls it before a tool's write is accepted.
func CheckWorkspace(files map[string]int64, written []FileWrite, limits WorkspaceLimits) error {
	limits = limits.WithDefaults()
	for _, w := range written {
		if limits.MaxFile > 0 && int64(len(w.Content)) > limits.MaxFile {
			return &BoundError{Key: "workspace.max_file", Limit: limits.MaxFile,
				Detail: fmt.Sprintf("%s would be %s", w.Path, FormatBytes(int64(len(w.Content))))}
		}
	}
	if limits.MaxFiles > 0 && len(files) > limits.MaxFiles {
		return &BoundError{Key: "workspace.max_files", Limit: int64(limits.MaxFiles),
			Detail: fmt.Sprintf("the workspace would hold %d files", len(files))}
	}
	var total int64
	for _, n := range files {
		total += n
	}
	if limits.MaxBytes > 0 && total > limits.MaxBytes {
		return &BoundError{Key: "workspace.max_bytes", Limit: limits.MaxBytes,
			Detail: fmt.Sprintf("the workspace would hold %s", FormatBytes(total))}
	}
	return checkTree(files, written)
}

// checkTree refuses a state where a file's path is a directory of another
// file ("a" and "a/b"). Only the paths written can introduce that.
func checkTree(files map[string]int64, written []FileWrite) error {
	if len(written) == 0 {
		return nil
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, w := range written {
		// A directory of w that is a file.
		for i := strings.IndexByte(w.Path, '/'); i >= 0; i = nextSlash(w.Path, i) {
			if _, ok := files[w.Path[:i]]; ok {
				return fmt.Errorf("workspace: %s: %s is a file, not a directory", w.Path, w.Path[:i])
			}
		}
		// A file under w.
		j := sort.SearchStrings(paths, w.Path+"/")
		if j < len(paths) && strings.HasPrefix(paths[j], w.Path+"/") {
			return fmt.Errorf("workspace: %s: it is a directory (it holds %s)", w.Path, paths[j])
		}
	}
	return nil
}

func nextSlash(s string, i int) int {
	k := strings.IndexByte(s[i+1:], '/')
	if k < 0 {
		return -1
	}
	return i + 1 + k
}

// ResultingSizes returns the sizes of a workspace's files after change:
// current (the records before), minus deletes, plus writes.
func ResultingSizes(current []FileInfo, change WorkspaceChange) map[string]int64 {
	out := make(map[string]int64, len(current)+len(change.Writes))
	for _, f := range current {
		out[f.Path] = f.Size
	}
	for _, d := range change.Deletes {
		delete(out, d)
	}
	for _, w := range change.Writes {
		out[w.Path] = int64(len(w.Content))
	}
	return out
}

// NotFoundFile is the error of reading a missing workspace file.
func NotFoundFile(path string) error {
	return fmt.Errorf("workspace file %s: %w", path, errNotExist)
}

// errNotExist wraps both ErrNotFound and fs.ErrNotExist.
var errNotExist = notExist{}

type notExist struct{}

func (notExist) Error() string { return "no such file" }
func (notExist) Is(target error) bool {
	return target == ErrNotFound || target == fs.ErrNotExist
}
