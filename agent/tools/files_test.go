package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/agent/tools"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// filesRig is a bolt store and a turn overlay over one chat's workspace.
type filesRig struct {
	st    *bolt.Store
	chat  string
	files *agent.TurnFiles
	ctx   context.Context
	tools map[string]agent.Tool
}

func newFilesRig(t *testing.T, limits memory.WorkspaceLimits) *filesRig {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	r := &filesRig{st: st, chat: "telegram:42", tools: map[string]agent.Tool{}}
	r.newTurn(limits)
	for _, tl := range tools.NewFiles(tools.FilesOptions{MaxOutput: 600}) {
		r.tools[tl.Name()] = tl
	}
	return r
}

// newTurn starts a new turn's overlay (what was staged before is dropped
// unless committed).
func (r *filesRig) newTurn(limits memory.WorkspaceLimits) {
	r.files = agent.NewTurnFiles(r.st, r.chat, limits, nil)
	r.ctx = agent.WithCallInfo(context.Background(), agent.CallInfo{SessionKey: r.chat, Files: r.files})
}

// commit applies the overlay's change as the turn's commit does.
func (r *filesRig) commit(t *testing.T) {
	t.Helper()
	turn := memory.Turn{ID: "t", Messages: []memory.Message{{Role: memory.RoleUser, Content: "x"}}, Files: r.files.Change(), FileLimits: r.files.Limits()}
	if err := r.st.AppendTurn(context.Background(), r.chat, turn); err != nil {
		t.Fatal(err)
	}
}

func (r *filesRig) call(t *testing.T, tool string, args any) (string, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	tl, ok := r.tools[tool]
	if !ok {
		t.Fatalf("no tool %s", tool)
	}
	return tl.Call(r.ctx, raw)
}

func (r *filesRig) must(t *testing.T, tool string, args any) string {
	t.Helper()
	out, err := r.call(t, tool, args)
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	return out
}

type m = map[string]any

func TestFileToolsWriteReadEditListDelete(t *testing.T) {
	r := newFilesRig(t, memory.WorkspaceLimits{})
	out := r.must(t, tools.NameWriteFile, m{"path": "./notes//todo.md", "content": "buy tea\nbuy milk\nbuy tea bags\n"})
	if !strings.Contains(out, "wrote notes/todo.md (30 bytes)") || !strings.Contains(out, "1 of 1000 files") {
		t.Fatalf("write_file said %q", out)
	}
	// The overlay is seen within the turn, not yet in the store.
	if out := r.must(t, tools.NameReadFile, m{"path": "notes/todo.md"}); out != "notes/todo.md: lines 1-3 of 3 (30 bytes)\nbuy tea\nbuy milk\nbuy tea bags" {
		t.Fatalf("read_file said %q", out)
	}
	if stored, _ := r.st.ListFiles(context.Background(), r.chat); len(stored) != 0 {
		t.Fatalf("the store has files before the commit: %+v", stored)
	}

	// Ambiguous and missing edits are refused, naming the string.
	_, err := r.call(t, tools.NameEditFile, m{"path": "notes/todo.md", "old_string": "buy tea", "new_string": "x"})
	assertPermanent(t, err, `old_string "buy tea" occurs 2 times in notes/todo.md; give more context`)
	_, err = r.call(t, tools.NameEditFile, m{"path": "notes/todo.md", "old_string": "coffee", "new_string": "x"})
	assertPermanent(t, err, `old_string "coffee" does not occur in notes/todo.md`)
	out = r.must(t, tools.NameEditFile, m{"path": "notes/todo.md", "old_string": "buy milk\n", "new_string": "buy oat milk\n"})
	if !strings.Contains(out, "edited notes/todo.md at line 2") {
		t.Fatalf("edit_file said %q", out)
	}
	if out := r.must(t, tools.NameReadFile, m{"path": "notes/todo.md", "offset": 2, "limit": 1}); out != "notes/todo.md: lines 2-2 of 3 (34 bytes)\nbuy oat milk\n[… 1 more lines; continue with offset=3]" {
		t.Fatalf("read_file with offset said %q", out)
	}

	r.must(t, tools.NameWriteFile, m{"path": "bin/run.sh", "content": "#!/bin/sh\n", "executable": true})
	if out := r.must(t, tools.NameListFiles, m{}); out != "bin/run.sh  10 bytes  (executable)\nnotes/todo.md  34 bytes\nworkspace: 2 of 1000 files, 44 bytes of 50 MiB" {
		t.Fatalf("list_files said %q", out)
	}
	if out := r.must(t, tools.NameListFiles, m{"dir": "notes"}); !strings.HasPrefix(out, "notes/todo.md  34 bytes\nworkspace:") {
		t.Fatalf("list_files dir=notes said %q", out)
	}
	r.commit(t)

	// The next turn sees the committed files; a delete is staged until its commit.
	r.newTurn(memory.WorkspaceLimits{})
	if out := r.must(t, tools.NameDeleteFile, m{"path": "bin/run.sh"}); !strings.HasPrefix(out, "deleted bin/run.sh; workspace: 1 of 1000 files") {
		t.Fatalf("delete_file said %q", out)
	}
	_, err = r.call(t, tools.NameReadFile, m{"path": "bin/run.sh"})
	assertPermanent(t, err, "bin/run.sh: no such file")
	_, err = r.call(t, tools.NameDeleteFile, m{"path": "bin/run.sh"})
	assertPermanent(t, err, "no such file")
	r.newTurn(memory.WorkspaceLimits{}) // that turn crashed before its commit
	if out := r.must(t, tools.NameReadFile, m{"path": "bin/run.sh"}); !strings.Contains(out, "#!/bin/sh") {
		t.Fatalf("a file deleted by an uncommitted turn is gone: %q", out)
	}
}

func TestFileToolsRefuseBadPaths(t *testing.T) {
	r := newFilesRig(t, memory.WorkspaceLimits{})
	tests := []struct{ path, want string }{
		{"a/../../etc/passwd", `contains ".."`},
		{"/etc/passwd", "is absolute"},
		{"..", `contains ".."`},
		{"a/..", `contains ".."`},
		{".", "names the workspace itself"},
		{"", "empty path"},
		{`a\..\b`, "backslash"},
		{"a\x00b", "control character"},
		{"a\nb", "control character"},
		{"evil\u202Etxt.exe", "invisible formatting character (U+202E)"},
		{"zero\u200Bwidth", "invisible formatting character (U+200B)"},
		{"a/   /b", "only spaces"},
		{strings.Repeat("x", 256), "longer than 255 bytes"},
		{strings.Repeat("abcdefgh/", 120), "longer than 1024 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			for _, tool := range []string{tools.NameWriteFile, tools.NameReadFile, tools.NameDeleteFile} {
				args := m{"path": tc.path}
				if tool == tools.NameWriteFile {
					args["content"] = "x"
				}
				_, err := r.call(t, tool, args)
				assertPermanent(t, err, tc.want)
			}
		})
	}
	// Accepted and normalized: "./a", "a//b".
	for in, want := range map[string]string{"./x": "x", "a//b/": "a/b", "ünïcödé/файл.txt": "ünïcödé/файл.txt"} {
		if out := r.must(t, tools.NameWriteFile, m{"path": in, "content": "x"}); !strings.HasPrefix(out, "wrote "+want+" ") {
			t.Fatalf("write %q said %q, want the path %q", in, out, want)
		}
	}
	if list, _ := r.files.List(r.ctx); len(list) != 3 {
		t.Fatalf("files = %+v", list)
	}
}

func TestFileToolsBounds(t *testing.T) {
	limits := memory.WorkspaceLimits{MaxBytes: 100, MaxFiles: 2, MaxFile: 60}
	tests := []struct {
		name    string
		setup   []m // write_file calls that succeed
		write   m
		wantErr string
	}{
		{"one file over max_file", nil, m{"path": "a", "content": strings.Repeat("a", 61)},
			"write_file: workspace.max_file (60 bytes) would be exceeded: a would be 61 bytes"},
		{"too many files", []m{{"path": "a", "content": "1"}, {"path": "b", "content": "2"}}, m{"path": "c", "content": "3"},
			"workspace.max_files (2) would be exceeded: the workspace would hold 3 files"},
		{"too many bytes", []m{{"path": "a", "content": strings.Repeat("a", 60)}}, m{"path": "b", "content": strings.Repeat("b", 41)},
			"workspace.max_bytes (100 bytes) would be exceeded: the workspace would hold 101 bytes"},
		{"a file where a directory is", []m{{"path": "d/x", "content": "1"}}, m{"path": "d", "content": "2"},
			"d: it is a directory (it holds d/x)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newFilesRig(t, limits)
			for _, a := range tc.setup {
				r.must(t, tools.NameWriteFile, a)
			}
			before, _ := r.files.List(r.ctx)
			_, err := r.call(t, tools.NameWriteFile, tc.write)
			assertPermanent(t, err, tc.wantErr)
			after, _ := r.files.List(r.ctx)
			if len(after) != len(before) {
				t.Fatalf("a refused write changed the files: %+v → %+v", before, after)
			}
		})
	}
	// An edit that would grow a file past max_file is refused too.
	r := newFilesRig(t, limits)
	r.must(t, tools.NameWriteFile, m{"path": "a", "content": "x"})
	_, err := r.call(t, tools.NameEditFile, m{"path": "a", "old_string": "x", "new_string": strings.Repeat("y", 61)})
	assertPermanent(t, err, "workspace.max_file (60 bytes)")
}

func TestReadFileBinaryAndLongText(t *testing.T) {
	r := newFilesRig(t, memory.WorkspaceLimits{})
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
	if err := r.files.Apply(r.ctx, memory.WorkspaceChange{Writes: []memory.FileWrite{{Path: "img.png", Content: []byte(png)},
		{Path: "latin1.txt", Content: []byte("caf\xe9")}}}); err != nil {
		t.Fatal(err)
	}
	if out := r.must(t, tools.NameReadFile, m{"path": "img.png"}); out != "img.png: binary file, 16 bytes, type image/png (by content sniffing); not shown" {
		t.Fatalf("read_file of a PNG said %q", out)
	}
	if out := r.must(t, tools.NameReadFile, m{"path": "latin1.txt"}); !strings.Contains(out, "binary file, 4 bytes") {
		t.Fatalf("read_file of invalid UTF-8 said %q", out)
	}
	_, err := r.call(t, tools.NameEditFile, m{"path": "img.png", "old_string": "PNG", "new_string": "GIF"})
	assertPermanent(t, err, "img.png is a binary file")

	var long strings.Builder
	for i := range 100 {
		long.WriteString(strings.Repeat("line ", 4) + string(rune('a'+i%26)) + "\n")
	}
	r.must(t, tools.NameWriteFile, m{"path": "long.txt", "content": long.String()})
	out := r.must(t, tools.NameReadFile, m{"path": "long.txt"})
	if len(out) > 600 || !strings.Contains(out, "more lines; continue with offset=") || !strings.HasPrefix(out, "long.txt: lines 1-") {
		t.Fatalf("a long read (%d chars) = %q", len(out), out)
	}
}

func TestFileToolsWithoutWorkspace(t *testing.T) {
	args := map[string]string{
		tools.NameReadFile:   `{"path":"a"}`,
		tools.NameWriteFile:  `{"path":"a","content":"x"}`,
		tools.NameEditFile:   `{"path":"a","old_string":"a","new_string":"b"}`,
		tools.NameListFiles:  `{}`,
		tools.NameDeleteFile: `{"path":"a"}`,
	}
	for _, tl := range tools.NewFiles(tools.FilesOptions{}) {
		_, err := tl.Call(context.Background(), json.RawMessage(args[tl.Name()]))
		if err == nil || !strings.Contains(err.Error(), "this chat has no workspace") {
			t.Fatalf("%s without a workspace: %v", tl.Name(), err)
		}
	}
}

func assertPermanent(t *testing.T, err error, want string) {
	t.Helper()
	var pe *agent.PermanentError
	if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &pe) {
		t.Fatalf("error = %v (permanent %v), want a permanent error containing %q", err, errors.As(err, &pe), want)
	}
}
