package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/memory"
)

// The file tools (issue 31): read_file, write_file, edit_file, list_files and
// delete_file work on the workspace of the chat the turn runs in, through
// the turn's overlay (agent.CallInfo.Files, agent/workspace.go): what they
// change is committed with the turn, and only the chat's own files are
// reachable — there is no argument naming a chat, and every path goes
// through memory.CleanPath (relative, no "..", no absolute path).
//
// Decisions:
//   - read_file counts in lines: offset is the first line (1-based), limit
//     the number of lines (default DefaultReadLines). The text is returned
//     as stored, under a one-line header, and cut at a line boundary to
//     MaxOutput characters with a note telling the next offset. A binary
//     file (a NUL byte or invalid UTF-8) is described, not dumped: "binary
//     file, N bytes, type X (by content sniffing)".
//   - edit_file replaces old_string with new_string only when old_string
//     occurs exactly once; none names the string, several say how many and
//     ask for more context. It refuses binary files.
//   - Errors the model can only fix by changing its arguments (a bad path,
//     a bound, a missing file, an ambiguous edit) are agent.PermanentError:
//     never retried.

// Tool names.
const (
	NameReadFile   = "read_file"
	NameWriteFile  = "write_file"
	NameEditFile   = "edit_file"
	NameListFiles  = "list_files"
	NameDeleteFile = "delete_file"
)

// FileToolNames are the file tools' names, in the order NewFiles returns them.
var FileToolNames = []string{NameReadFile, NameWriteFile, NameEditFile, NameListFiles, NameDeleteFile}

// File tool defaults.
const (
	DefaultReadLines    = 400  // read_file's limit when none is given
	DefaultFilesOutput  = 4000 // characters of a result (agent.observation_max_len)
	DefaultListedFiles  = 200  // list_files's entries before "… N more"
	maxWriteArgContent  = 16 << 20
	maxEditArgContent   = 1 << 20
	binarySniffPrefix   = 512
	readHeaderMaxLength = 200
)

// FilesOptions configures NewFiles; zero fields take the defaults.
type FilesOptions struct {
	// MaxOutput bounds a result in characters (DefaultFilesOutput); set it
	// to agent.observation_max_len so a cut is the tool's, with a note,
	// not the agent's.
	MaxOutput int
}

// NewFiles returns the five file tools.
func NewFiles(o FilesOptions) []agent.Tool {
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultFilesOutput
	}
	return []agent.Tool{&ReadFile{o: o}, &WriteFile{}, &EditFile{}, &ListFiles{o: o}, &DeleteFile{}}
}

// turnFiles is the running turn's overlay.
func turnFiles(ctx context.Context, tool string) (*agent.TurnFiles, error) {
	ci, ok := agent.CallInfoFrom(ctx)
	if !ok || ci.Files == nil {
		return nil, agent.Permanent(fmt.Errorf("%s: this chat has no workspace", tool))
	}
	return ci.Files, nil
}

// fileErr wraps err for the model: permanent unless it is a storage failure.
func fileErr(tool string, err error) error {
	var be *memory.BoundError
	switch {
	case errors.As(err, &be), errors.Is(err, fs.ErrNotExist):
		return agent.Permanent(fmt.Errorf("%s: %w", tool, err))
	case memory.IsStorageError(err), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w", tool, err)
	}
	return agent.Permanent(fmt.Errorf("%s: %w", tool, err))
}

// isBinary reports whether data is not text: a NUL byte or invalid UTF-8.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data)
}

// describeBinary is what read_file says of a binary file.
func describeBinary(fi memory.FileInfo, data []byte) string {
	head := data[:min(len(data), binarySniffPrefix)]
	return fmt.Sprintf("%s: binary file, %d bytes, type %s (by content sniffing); not shown", fi.Path, fi.Size, http.DetectContentType(head))
}

// --- read_file

type readFileArgs struct {
	Path   string `json:"path" jsonschema:"The file's path, relative to the workspace (for example notes/todo.md)."`
	Offset int    `json:"offset,omitempty" jsonschema:"The first line to read, counting from 1. Default 1."`
	Limit  int    `json:"limit,omitempty" jsonschema:"How many lines to read. Default 400."`
}

var readFileSchema = sync.OnceValue(func() json.RawMessage {
	return agent.MustArgsSchema[readFileArgs](func(p map[string]*jsonschema.Schema) {
		p["path"].MaxLength = jsonschema.Ptr(memory.MaxPathBytes)
		p["offset"].Minimum = jsonschema.Ptr(1.0)
		p["limit"].Minimum = jsonschema.Ptr(1.0)
	})
})

// ReadFile is the read_file tool.
type ReadFile struct{ o FilesOptions }

// Name implements agent.Tool.
func (*ReadFile) Name() string { return NameReadFile }

// Description implements agent.Tool.
func (*ReadFile) Description() string {
	return "Read a text file of this chat's workspace. Lines offset (from 1) to offset+limit-1 are returned under a header " +
		"giving the range and the file's line count; long results are cut at a line and say where to continue. " +
		"Binary files are described, not shown."
}

// Schema implements agent.Tool.
func (*ReadFile) Schema() json.RawMessage { return readFileSchema() }

// Repeatable implements agent.Repeatable: reading has no effects.
func (*ReadFile) Repeatable() bool { return true }

// Call implements agent.Tool.
func (t *ReadFile) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	var a readFileArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", agent.Permanent(fmt.Errorf("%s: %w", NameReadFile, err))
	}
	files, err := turnFiles(ctx, NameReadFile)
	if err != nil {
		return "", err
	}
	data, fi, err := files.Read(ctx, a.Path)
	if err != nil {
		return "", fileErr(NameReadFile, err)
	}
	if isBinary(data) {
		return describeBinary(fi, data), nil
	}
	return readLines(fi, string(data), a.Offset, a.Limit, t.o.MaxOutput), nil
}

// readLines renders lines [offset, offset+limit) of text under a header,
// cut at a line boundary to maxOut characters.
func readLines(fi memory.FileInfo, text string, offset, limit, maxOut int) string {
	if offset < 1 {
		offset = 1
	}
	if limit < 1 {
		limit = DefaultReadLines
	}
	if text == "" {
		return fi.Path + ": empty file"
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	total := len(lines)
	if offset > total {
		return fmt.Sprintf("%s: has %d lines; offset %d is past the end", fi.Path, total, offset)
	}
	end := min(offset-1+limit, total)
	budget := max(maxOut-readHeaderMaxLength, 1)
	var body strings.Builder
	last := offset - 1
	for i := offset - 1; i < end; i++ {
		if body.Len()+len(lines[i]) > budget {
			if i == offset-1 { // one line longer than the budget: cut it
				body.WriteString(cutUTF8(lines[i], budget))
				body.WriteString("…\n")
				last = i + 1
			}
			break
		}
		body.WriteString(lines[i])
		last = i + 1
	}
	head := fmt.Sprintf("%s: lines %d-%d of %d (%s)", fi.Path, offset, last, total, memory.FormatBytes(fi.Size))
	out := head + "\n" + body.String()
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	if last < total {
		out += fmt.Sprintf("[… %d more lines; continue with offset=%d]", total-last, last+1)
	}
	return strings.TrimSuffix(out, "\n")
}

// cutUTF8 cuts s to at most n bytes on a rune boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// --- write_file

type writeFileArgs struct {
	Path       string `json:"path" jsonschema:"The file's path, relative to the workspace (for example notes/todo.md). Directories are implied by the path."`
	Content    string `json:"content" jsonschema:"The whole new content of the file."`
	Executable bool   `json:"executable,omitempty" jsonschema:"Mark the file executable (a script). Default false."`
}

var writeFileSchema = sync.OnceValue(func() json.RawMessage {
	return agent.MustArgsSchema[writeFileArgs](func(p map[string]*jsonschema.Schema) {
		p["path"].MaxLength = jsonschema.Ptr(memory.MaxPathBytes)
		p["content"].MaxLength = jsonschema.Ptr(maxWriteArgContent)
	})
})

// WriteFile is the write_file tool.
type WriteFile struct{}

// Name implements agent.Tool.
func (*WriteFile) Name() string { return NameWriteFile }

// Description implements agent.Tool.
func (*WriteFile) Description() string {
	return "Create or replace a text file in this chat's workspace with the given content. The workspace keeps the chat's files " +
		"between messages; it is bounded in total size, number of files and size of one file."
}

// Schema implements agent.Tool.
func (*WriteFile) Schema() json.RawMessage { return writeFileSchema() }

// Repeatable implements agent.Repeatable: writing the same content twice
// leaves the same file.
func (*WriteFile) Repeatable() bool { return true }

// Call implements agent.Tool.
func (*WriteFile) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	var a writeFileArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", agent.Permanent(fmt.Errorf("%s: %w", NameWriteFile, err))
	}
	files, err := turnFiles(ctx, NameWriteFile)
	if err != nil {
		return "", err
	}
	var mode fs.FileMode = 0o644
	if a.Executable {
		mode = 0o755
	}
	fi, err := files.Write(ctx, a.Path, []byte(a.Content), mode)
	if err != nil {
		return "", fileErr(NameWriteFile, err)
	}
	return fmt.Sprintf("wrote %s (%s)%s", fi.Path, memory.FormatBytes(fi.Size), usageLine(ctx, files)), nil
}

// usageLine is "; workspace: N files, X of Y" (or "" when it cannot be read).
func usageLine(ctx context.Context, files *agent.TurnFiles) string {
	list, err := files.List(ctx)
	if err != nil {
		return ""
	}
	var total int64
	for _, f := range list {
		total += f.Size
	}
	l := files.Limits()
	return fmt.Sprintf("; workspace: %d of %d files, %s of %s", len(list), l.MaxFiles, memory.FormatBytes(total), memory.FormatBytes(l.MaxBytes))
}

// --- edit_file

type editFileArgs struct {
	Path      string `json:"path" jsonschema:"The file's path, relative to the workspace."`
	OldString string `json:"old_string" jsonschema:"The exact text to replace. It must occur exactly once in the file; include surrounding lines to make it unique."`
	NewString string `json:"new_string" jsonschema:"The text to put in its place (may be empty to delete it)."`
}

var editFileSchema = sync.OnceValue(func() json.RawMessage {
	return agent.MustArgsSchema[editFileArgs](func(p map[string]*jsonschema.Schema) {
		p["path"].MaxLength = jsonschema.Ptr(memory.MaxPathBytes)
		p["old_string"].MinLength = jsonschema.Ptr(1)
		p["old_string"].MaxLength = jsonschema.Ptr(maxEditArgContent)
		p["new_string"].MaxLength = jsonschema.Ptr(maxEditArgContent)
	})
})

// EditFile is the edit_file tool.
type EditFile struct{}

// Name implements agent.Tool.
func (*EditFile) Name() string { return NameEditFile }

// Description implements agent.Tool.
func (*EditFile) Description() string {
	return "Replace one exact occurrence of old_string with new_string in a text file of this chat's workspace. " +
		"old_string must occur exactly once; when it occurs several times, include more surrounding text."
}

// Schema implements agent.Tool.
func (*EditFile) Schema() json.RawMessage { return editFileSchema() }

// Call implements agent.Tool. It is not Repeatable: repeating an edit
// after an ambiguous failure could apply it twice.
func (*EditFile) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	var a editFileArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", agent.Permanent(fmt.Errorf("%s: %w", NameEditFile, err))
	}
	files, err := turnFiles(ctx, NameEditFile)
	if err != nil {
		return "", err
	}
	if a.OldString == "" {
		return "", agent.Permanent(fmt.Errorf("%s: old_string is empty; give the exact text to replace", NameEditFile))
	}
	data, fi, err := files.Read(ctx, a.Path)
	if err != nil {
		return "", fileErr(NameEditFile, err)
	}
	if isBinary(data) {
		return "", agent.Permanent(fmt.Errorf("%s: %s is a binary file; edit_file changes text files only", NameEditFile, fi.Path))
	}
	text := string(data)
	switch n := strings.Count(text, a.OldString); n {
	case 0:
		return "", agent.Permanent(fmt.Errorf("%s: old_string %s does not occur in %s", NameEditFile, quoteShort(a.OldString), fi.Path))
	case 1:
	default:
		return "", agent.Permanent(fmt.Errorf("%s: old_string %s occurs %d times in %s; give more context so it occurs once",
			NameEditFile, quoteShort(a.OldString), n, fi.Path))
	}
	out := strings.Replace(text, a.OldString, a.NewString, 1)
	nfi, err := files.Write(ctx, fi.Path, []byte(out), fi.Mode)
	if err != nil {
		return "", fileErr(NameEditFile, err)
	}
	line := strings.Count(text[:strings.Index(text, a.OldString)], "\n") + 1
	return fmt.Sprintf("edited %s at line %d (%s now)", nfi.Path, line, memory.FormatBytes(nfi.Size)), nil
}

// quoteShort quotes s, cut to 80 bytes.
func quoteShort(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%q…", cutUTF8(s, 80))
	}
	return fmt.Sprintf("%q", s)
}

// --- list_files

type listFilesArgs struct {
	Dir string `json:"dir,omitempty" jsonschema:"List only the files under this directory (relative). Default: every file."`
}

var listFilesSchema = sync.OnceValue(func() json.RawMessage {
	return agent.MustArgsSchema[listFilesArgs](func(p map[string]*jsonschema.Schema) {
		p["dir"].MaxLength = jsonschema.Ptr(memory.MaxPathBytes)
	})
})

// ListFiles is the list_files tool.
type ListFiles struct{ o FilesOptions }

// Name implements agent.Tool.
func (*ListFiles) Name() string { return NameListFiles }

// Description implements agent.Tool.
func (*ListFiles) Description() string {
	return "List the files of this chat's workspace (path, size), with the totals and the workspace's bounds."
}

// Schema implements agent.Tool.
func (*ListFiles) Schema() json.RawMessage { return listFilesSchema() }

// Repeatable implements agent.Repeatable.
func (*ListFiles) Repeatable() bool { return true }

// Call implements agent.Tool.
func (t *ListFiles) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	var a listFilesArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", agent.Permanent(fmt.Errorf("%s: %w", NameListFiles, err))
	}
	files, err := turnFiles(ctx, NameListFiles)
	if err != nil {
		return "", err
	}
	prefix := ""
	if strings.Trim(a.Dir, "/. ") != "" {
		d, err := memory.CleanPath(a.Dir)
		if err != nil {
			return "", fileErr(NameListFiles, err)
		}
		prefix = d + "/"
	}
	list, err := files.List(ctx)
	if err != nil {
		return "", fileErr(NameListFiles, err)
	}
	return FormatFileList(list, prefix, files.Limits(), t.o.MaxOutput), nil
}

// FormatFileList renders a workspace listing: one "path  size" line a file
// under prefix, then the totals against the bounds; cut to maxOut characters
// with "… N more". /files in chat shows the same text.
func FormatFileList(list []memory.FileInfo, prefix string, l memory.WorkspaceLimits, maxOut int) string {
	l = l.WithDefaults()
	var total int64
	for _, f := range list {
		total += f.Size
	}
	foot := fmt.Sprintf("%d of %d files, %s of %s", len(list), l.MaxFiles, memory.FormatBytes(total), memory.FormatBytes(l.MaxBytes))
	var b strings.Builder
	shown, matched := 0, 0
	for _, f := range list {
		if !strings.HasPrefix(f.Path, prefix) {
			continue
		}
		matched++
		line := fmt.Sprintf("%s  %s", f.Path, memory.FormatBytes(f.Size))
		if f.Mode&0o111 != 0 {
			line += "  (executable)"
		}
		if shown >= DefaultListedFiles || (maxOut > 0 && b.Len()+len(line)+len(foot)+40 > maxOut) {
			continue
		}
		b.WriteString(line + "\n")
		shown++
	}
	switch {
	case matched == 0 && prefix != "":
		b.WriteString("no files under " + strings.TrimSuffix(prefix, "/") + "\n")
	case matched == 0:
		b.WriteString("no files\n")
	case shown < matched:
		fmt.Fprintf(&b, "… %d more\n", matched-shown)
	}
	b.WriteString("workspace: " + foot)
	return b.String()
}

// --- delete_file

type deleteFileArgs struct {
	Path string `json:"path" jsonschema:"The file's path, relative to the workspace."`
}

var deleteFileSchema = sync.OnceValue(func() json.RawMessage {
	return agent.MustArgsSchema[deleteFileArgs](func(p map[string]*jsonschema.Schema) {
		p["path"].MaxLength = jsonschema.Ptr(memory.MaxPathBytes)
	})
})

// DeleteFile is the delete_file tool.
type DeleteFile struct{}

// Name implements agent.Tool.
func (*DeleteFile) Name() string { return NameDeleteFile }

// Description implements agent.Tool.
func (*DeleteFile) Description() string {
	return "Delete a file from this chat's workspace."
}

// Schema implements agent.Tool.
func (*DeleteFile) Schema() json.RawMessage { return deleteFileSchema() }

// Call implements agent.Tool.
func (*DeleteFile) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	var a deleteFileArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", agent.Permanent(fmt.Errorf("%s: %w", NameDeleteFile, err))
	}
	files, err := turnFiles(ctx, NameDeleteFile)
	if err != nil {
		return "", err
	}
	p, err := memory.CleanPath(a.Path)
	if err != nil {
		return "", fileErr(NameDeleteFile, err)
	}
	if err := files.Delete(ctx, p); err != nil {
		return "", fileErr(NameDeleteFile, err)
	}
	return "deleted " + p + usageLine(ctx, files), nil
}
