package personas

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 27 (5): Load reads only regular files inside the directory,
// without blocking and bounded. A FIFO, a huge file and a symlink that
// leads out of the directory (to a persona file, to /dev/zero) are each
// reported with the reason and skipped; the others load, a symlink that
// stays inside included. A directory named *.md is ignored, as before.
func TestLoadRefusesSpecialFiles(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "personas")
	if err := os.MkdirAll(filepath.Join(dir, ".store"), 0o755); err != nil {
		t.Fatal(err)
	}
	persona := func(desc string) string { return "---\ndescription: " + desc + "\n---\nYou help.\n" }
	writeFile(t, filepath.Join(dir, "assistant.md"), persona("Helpful"))
	fifo := filepath.Join(dir, "pipe.md")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	huge := filepath.Join(dir, "huge.md")
	writeFile(t, huge, persona("Huge"))
	if err := os.Truncate(huge, 1<<30); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "outside.md"), persona("Outside"))
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	link(filepath.Join(root, "outside.md"), "outside.md")
	link("/dev/zero", "zero.md")
	writeFile(t, filepath.Join(dir, ".store", "linked.md"), persona("Linked from inside"))
	link(filepath.Join(".store", "linked.md"), "linked.md")
	if err := os.Mkdir(filepath.Join(dir, "sub.md"), 0o755); err != nil {
		t.Fatal(err)
	}

	var (
		set  *Set
		errs []error
	)
	done := make(chan struct{})
	go func() { defer close(done); set, errs = Load(dir) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // a hang detector, not a time limit
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = f.Close()
		}
		t.Fatal("Load is blocked on the FIFO")
	}
	if got, want := set.Names(), []string{"assistant", "linked"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Names = %v, want %v", got, want)
	}
	var msgs []string
	for _, err := range errs {
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("error %v is not a *ParseError", err)
		}
		msgs = append(msgs, err.Error())
	}
	slices.Sort(msgs)
	want := []string{
		huge + ": file is 1073741824 bytes, more than the 262144 allowed",
		filepath.Join(dir, "outside.md") + ": refused: it leads outside " + dir + " (a symlink)",
		fifo + ": refused: not a regular file (a named pipe)",
		filepath.Join(dir, "zero.md") + ": refused: it leads outside " + dir + " (a symlink)",
	}
	if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
		t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
	if p, _ := set.Get("linked"); p.Description != "Linked from inside" || p.File != filepath.Join(dir, "linked.md") {
		t.Fatalf("linked = %+v", p)
	}
}
