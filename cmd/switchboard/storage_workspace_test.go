package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/pgtest"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
	"github.com/switchboard-bot/switchboard/memory/postgres"
)

// Issue 31: `storage migrate` copies the chats' workspace files — content,
// mode, modification time — and a forced second copy does not double them.
func TestStorageMigrateCopiesWorkspaceFiles(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	src, err := bolt.Open(path, memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 700<<10)
	files := map[string]map[string]string{
		"telegram:1": {"notes/todo.md": "- tea\n", "big.bin": big, "empty": ""},
		"slack:C1":   {"run.sh": "#!/bin/sh\n"},
	}
	for chat, fs := range files {
		var c memory.WorkspaceChange
		for p, content := range fs {
			w := memory.FileWrite{Path: p, Content: []byte(content)}
			if p == "run.sh" {
				w.Mode = 0o755
			}
			c.Writes = append(c.Writes, w)
		}
		if err := src.ApplyFiles(ctx, chat, c, memory.WorkspaceLimits{}); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := src.ListFiles(ctx, "telegram:1")
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	url := pgtest.Start(t)
	for _, args := range [][]string{{"storage", "migrate"}, {"storage", "migrate", "--force"}} {
		code, out, errOut := runCLI(t, append(args, "--from", "bolt:"+path, "--to", "postgres:"+url)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
		}
	}
	st, err := postgres.Open(ctx, url, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for chat, fs := range files {
		list, err := st.ListFiles(ctx, chat)
		if err != nil || len(list) != len(fs) {
			t.Fatalf("%s: files %+v, %v", chat, list, err)
		}
		for p, content := range fs {
			data, fi, err := st.ReadFile(ctx, chat, p)
			if err != nil || string(data) != content {
				t.Fatalf("%s %s: %d bytes, %v", chat, p, len(data), err)
			}
			if p == "run.sh" && fi.Mode != 0o755 {
				t.Fatalf("run.sh mode %o", fi.Mode)
			}
		}
	}
	got, _ := st.ListFiles(ctx, "telegram:1")
	for i := range want {
		if got[i].Path != want[i].Path || got[i].SHA256 != want[i].SHA256 || !got[i].Modified.Equal(want[i].Modified.Truncate(1000)) {
			t.Fatalf("record %+v, want %+v", got[i], want[i])
		}
	}
}
