package chaos

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/loadtest"
)

// Issue 19 attack: the daemon hands its executable's pages back once its
// channels are up (internal/pagetrim) and runs them again from the page
// cache. An operator upgrading in place replaces the binary file under the
// running daemon (a rename over it: the old file is unlinked, its inode lives
// on while mapped). The pages the daemon handed back must come back from the
// old inode, not the new file: every message is still answered, by the code
// that started.
func TestBinaryReplacedAfterPagesReleased(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	r := newRig(t, loadtest.ModelOptions{}, loadtest.ConfigOptions{LogLevel: "debug"})
	dir := t.TempDir()
	bin := filepath.Join(dir, "switchboard")
	size := copyFile(t, r.bin, bin)
	r.bin = bin
	proc := r.start()

	if !until(func() bool { return strings.Contains(proc.Output(), "released idle memory") }) {
		t.Fatalf("the daemon did not release its start-up pages:\n%s", r.output())
	}
	if _, file, err := loadtest.RSSBreakdown(proc.Pid()); err == nil {
		t.Logf("file-backed RSS after the release: %d KiB of a %d KiB binary", file, size>>10)
	}

	// The upgrade: another program renamed over the running binary.
	other := filepath.Join(dir, "new")
	if err := os.WriteFile(other, []byte("#!/bin/sh\nexit 3\n"+strings.Repeat("x", int(size/2))), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, bin); err != nil {
		t.Fatal(err)
	}

	const chats, msgs = 6, 3
	res := r.converse(context.Background(), chats, msgs, 15*time.Second)
	if len(res.lost) > 0 || len(res.answered) != chats*msgs {
		t.Fatalf("answered %d of %d after the binary was replaced; lost %v\n%s", len(res.answered), chats*msgs, res.lost, r.output())
	}
	if d := res.duplicates(); len(d) > 0 {
		t.Errorf("duplicates: %v", d)
	}
	select {
	case <-proc.Done():
		t.Fatalf("the daemon exited: %v\n%s", proc.Err(), r.output())
	default:
	}
}

// copyFile copies src to dst (mode 0755) as cp does (io.Copy between files:
// copy_file_range), and returns its size. Written by one large write(2)
// instead, the copy's page cache would be in large folios, which the kernel
// maps back whole at the first touch: the daemon would hand little back.
func copyFile(t *testing.T, src, dst string) int64 {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}
