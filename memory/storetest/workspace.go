package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/memory"
)

// The workspace (memory.Workspace): files per chat, bounded, all of a change
// or none, in the turn's own commit, kept by reset, moved with the session.

// wsFiles is the path → content of a chat's files as List and Read see them.
func wsFiles(t *testing.T, st memory.Store, chat string) map[string]string {
	t.Helper()
	ctx := context.Background()
	list, err := st.ListFiles(ctx, chat)
	if err != nil {
		t.Fatalf("list files of %s: %v", chat, err)
	}
	out := map[string]string{}
	for i, fi := range list {
		if i > 0 && list[i-1].Path >= fi.Path {
			t.Fatalf("list not ordered by path: %q then %q", list[i-1].Path, fi.Path)
		}
		data, rec, err := st.ReadFile(ctx, chat, fi.Path)
		if err != nil {
			t.Fatalf("read %s: %v", fi.Path, err)
		}
		sum := sha256.Sum256(data)
		if rec.Size != int64(len(data)) || fi.Size != rec.Size || rec.SHA256 != hex.EncodeToString(sum[:]) || rec.SHA256 != fi.SHA256 {
			t.Fatalf("record of %s = %+v (list %+v) for %d bytes", fi.Path, rec, fi, len(data))
		}
		out[fi.Path] = string(data)
	}
	return out
}

func sameFiles(t *testing.T, what string, got map[string]string, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: files %v, want %v", what, keys(got), keys(want))
	}
	for p, c := range want {
		if g, ok := got[p]; !ok || g != c {
			t.Fatalf("%s: %s = %.40q (present %v), want %.40q", what, p, g, ok, c)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func writes(kv ...string) memory.WorkspaceChange {
	var c memory.WorkspaceChange
	for i := 0; i+1 < len(kv); i += 2 {
		c.Writes = append(c.Writes, memory.FileWrite{Path: kv[i], Content: []byte(kv[i+1])})
	}
	return c
}

func (h harness) testWorkspaceFiles(t *testing.T) {
	ctx := context.Background()
	st, clk, dir := h.openTest(t)
	chat := "telegram:1"
	if got := wsFiles(t, st, chat); len(got) != 0 {
		t.Fatalf("a new chat has files: %v", got)
	}
	big := strings.Repeat("0123456789abcdef", 700<<10/16) // several bolt chunks
	bin := "\x00\x01\xffPNG"
	change := writes("notes/todo.md", "- tea\n", "big.txt", big, "img/x.bin", bin, "empty", "")
	change.Writes = append(change.Writes, memory.FileWrite{Path: "run.sh", Content: []byte("#!/bin/sh\necho hi\n"), Mode: 0o700})
	mustNo(t, st.ApplyFiles(ctx, chat, change, memory.WorkspaceLimits{}))
	want := map[string]string{"notes/todo.md": "- tea\n", "big.txt": big, "img/x.bin": bin, "empty": "", "run.sh": "#!/bin/sh\necho hi\n"}
	sameFiles(t, "after the first write", wsFiles(t, st, chat), want)
	list, _ := st.ListFiles(ctx, chat)
	for _, fi := range list {
		wantMode := uint32(0o644)
		if fi.Path == "run.sh" {
			wantMode = 0o755
		}
		if uint32(fi.Mode) != wantMode || !fi.Modified.Equal(clk.Now()) {
			t.Fatalf("%s: mode %o modified %v, want %o at %v", fi.Path, fi.Mode, fi.Modified, wantMode, clk.Now())
		}
	}
	if got := wsFiles(t, st, "telegram:2"); len(got) != 0 {
		t.Fatalf("another chat sees files: %v", got)
	}

	// Replace one, delete two (one of them missing: not an error), shrink big.
	clk.Advance(1e9)
	mustNo(t, st.ApplyFiles(ctx, chat, memory.WorkspaceChange{
		Writes:  []memory.FileWrite{{Path: "big.txt", Content: []byte("small now")}, {Path: "notes/todo.md", Content: []byte("- coffee\n")}},
		Deletes: []string{"img/x.bin", "never/was"},
	}, memory.WorkspaceLimits{}))
	want = map[string]string{"notes/todo.md": "- coffee\n", "big.txt": "small now", "empty": "", "run.sh": "#!/bin/sh\necho hi\n"}
	sameFiles(t, "after replace and delete", wsFiles(t, st, chat), want)

	if _, _, err := st.ReadFile(ctx, chat, "img/x.bin"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("read of a deleted file: %v, want ErrNotFound", err)
	}

	// Reopen keeps them.
	mustNo(t, st.Close())
	st = h.openAt(t, dir, TestOptions(clk))
	sameFiles(t, "after reopening", wsFiles(t, st, chat), want)

	// Bad paths are refused whole.
	for _, p := range []string{"../x", "/etc/passwd", "a/../b", "a\\b", "a\x00b", "./a", "a//b", ""} {
		err := st.ApplyFiles(ctx, chat, writes("ok.txt", "x", p, "y"), memory.WorkspaceLimits{})
		if err == nil {
			t.Fatalf("path %q accepted", p)
		}
	}
	sameFiles(t, "after refused paths", wsFiles(t, st, chat), want)
}

func (h harness) testWorkspaceBounds(t *testing.T) {
	ctx := context.Background()
	limits := memory.WorkspaceLimits{MaxBytes: 100, MaxFiles: 3, MaxFile: 60}
	tests := []struct {
		name    string
		change  memory.WorkspaceChange
		wantErr string // "" = accepted
	}{
		{"within every bound", writes("c", strings.Repeat("c", 40)), ""},
		{"one file over max_file", writes("c", strings.Repeat("c", 61)), "workspace.max_file (60 bytes) would be exceeded: c would be 61 bytes"},
		{"too many files", writes("c", "1", "d", "2"), "workspace.max_files (3) would be exceeded: the workspace would hold 4 files"},
		{"too many bytes", writes("c", strings.Repeat("c", 50)), "workspace.max_bytes (100 bytes) would be exceeded: the workspace would hold 110 bytes"},
		{"a delete makes room", memory.WorkspaceChange{Writes: writes("c", strings.Repeat("c", 60), "d", "1").Writes, Deletes: []string{"a"}}, ""},
		{"replacing counts the new size", writes("a", strings.Repeat("a", 50)), ""},
		{"a file as a directory", writes("a/x", "1"), "a is a file, not a directory"},
		{"a directory as a file", writes("dir", "1"), "it is a directory"},
		{"one bad write refuses the whole change", writes("c", "1", "d", strings.Repeat("d", 61)), "workspace.max_file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, _, _ := h.openTest(t)
			chat := "slack:C1"
			before := writes("a", strings.Repeat("a", 30), "dir/b", strings.Repeat("b", 30))
			mustNo(t, st.ApplyFiles(ctx, chat, before, limits))
			start := wsFiles(t, st, chat)
			err := st.ApplyFiles(ctx, chat, tc.change, limits)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				got := wsFiles(t, st, chat)
				for _, w := range tc.change.Writes {
					if got[w.Path] != string(w.Content) {
						t.Fatalf("%s not written", w.Path)
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
			if strings.HasPrefix(tc.wantErr, "workspace.") && !errors.Is(err, memory.ErrBound) {
				t.Fatalf("error %v does not wrap memory.ErrBound", err)
			}
			sameFiles(t, "after the refusal", wsFiles(t, st, chat), start)
		})
	}
}

func (h harness) testWorkspaceInTurnCommit(t *testing.T) {
	ctx := context.Background()
	st, _, _ := h.openTest(t)
	key := "discord:9"
	turn := func(id string, files *memory.WorkspaceChange, limits memory.WorkspaceLimits) memory.Turn {
		tr := SimpleTurn(1)
		tr.ID, tr.Files, tr.FileLimits = id, files, limits
		return tr
	}
	c := writes("a.txt", "one")
	mustNo(t, st.AppendTurn(ctx, key, turn("t1", &c, memory.WorkspaceLimits{})))
	sameFiles(t, "after AppendTurn", wsFiles(t, st, key), map[string]string{"a.txt": "one"})

	c2 := memory.WorkspaceChange{Writes: writes("b.txt", "two").Writes, Deletes: []string{"a.txt"}}
	t2 := turn("t2", &c2, memory.WorkspaceLimits{})
	if _, err := st.CommitTurn(ctx, key, memory.TurnCommit{Turn: &t2}); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, "after CommitTurn", wsFiles(t, st, key), map[string]string{"b.txt": "two"})

	// A change over the bounds at commit: the turn is kept, the files are not.
	c3 := writes("c.txt", "three!")
	if _, err := st.CommitTurn(ctx, key, memory.TurnCommit{Turn: ptr(turn("t3", &c3, memory.WorkspaceLimits{MaxFile: 5}))}); err != nil {
		t.Fatalf("a commit whose files no longer fit failed: %v", err)
	}
	turns, err := st.SessionTurns(ctx, key)
	if err != nil || len(turns) != 3 || turns[2].ID != "t3" {
		t.Fatalf("turns = %+v, %v", turns, err)
	}
	sameFiles(t, "after a refused commit change", wsFiles(t, st, key), map[string]string{"b.txt": "two"})

	// A turn whose files are another chat's (a background task's session
	// working in its chat's workspace): the change goes to that chat.
	task := key + "#task:t1"
	c4 := writes("task.txt", "four")
	t4 := turn("t4", &c4, memory.WorkspaceLimits{})
	t4.FilesOf = key
	if _, err := st.CommitTurn(ctx, task, memory.TurnCommit{Turn: &t4}); err != nil {
		t.Fatal(err)
	}
	c5 := memory.WorkspaceChange{Deletes: []string{"task.txt"}}
	t5 := turn("t5", &c5, memory.WorkspaceLimits{})
	t5.FilesOf = key
	mustNo(t, st.AppendTurn(ctx, task, t5))
	sameFiles(t, "the task session's own files", wsFiles(t, st, task), map[string]string{})
	c6 := writes("task.txt", "six")
	t6 := turn("t6", &c6, memory.WorkspaceLimits{})
	t6.FilesOf = key
	mustNo(t, st.AppendTurn(ctx, task, t6))
	sameFiles(t, "files of a task's turns", wsFiles(t, st, key), map[string]string{"b.txt": "two", "task.txt": "six"})
	mustNo(t, st.ApplyFiles(ctx, key, memory.WorkspaceChange{Deletes: []string{"task.txt"}}, memory.WorkspaceLimits{}))

	// /reset keeps the files; a move takes them along.
	mustNo(t, st.ResetSession(ctx, key))
	sameFiles(t, "after reset", wsFiles(t, st, key), map[string]string{"b.txt": "two"})
	to := "discord:10"
	mustNo(t, st.MoveSession(ctx, key, to))
	sameFiles(t, "moved", wsFiles(t, st, to), map[string]string{"b.txt": "two"})
	sameFiles(t, "the old key", wsFiles(t, st, key), map[string]string{})

	// A move onto a chat with files of its own is refused.
	mustNo(t, st.ApplyFiles(ctx, "x:1", writes("f", "x"), memory.WorkspaceLimits{}))
	mustNo(t, st.ApplyFiles(ctx, "x:2", writes("g", "y"), memory.WorkspaceLimits{}))
	if err := st.MoveSession(ctx, "x:1", "x:2"); err == nil {
		t.Fatal("moving files onto a chat with files succeeded")
	}
	sameFiles(t, "refused move, source", wsFiles(t, st, "x:1"), map[string]string{"f": "x"})
	sameFiles(t, "refused move, destination", wsFiles(t, st, "x:2"), map[string]string{"g": "y"})
}
