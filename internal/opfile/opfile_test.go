package opfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadFile(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "dir")
	write(t, filepath.Join(dir, "ok.md"), "hello")
	write(t, filepath.Join(dir, "max.md"), "12345678")
	write(t, filepath.Join(dir, "over.md"), "123456789")
	write(t, filepath.Join(dir, "sub", "inner.md"), "inner")
	write(t, filepath.Join(root, "outside.md"), "outside")
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.md")
	write(t, huge, "")
	if err := os.Truncate(huge, 1<<40); err != nil { // sparse
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"in.md":       filepath.Join("sub", "inner.md"),
		"subdir":      "sub",
		"out.md":      filepath.Join(root, "outside.md"),
		"up.md":       filepath.Join("..", "outside.md"),
		"zero.md":     "/dev/zero",
		"dangling.md": filepath.Join(root, "missing.md"),
		"outdir":      root,
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	// The directory itself may be reached through a symlink.
	dirLink := filepath.Join(root, "link-to-dir")
	if err := os.Symlink(dir, dirLink); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		dir, name, want string
		err             error
		msg             string
	}{
		{dir, "ok.md", "hello", nil, ""},
		{dirLink, "ok.md", "hello", nil, ""},
		{dir, "max.md", "12345678", nil, ""},
		{dir, "in.md", "inner", nil, ""},
		{dir, "subdir/inner.md", "inner", nil, ""},
		{dir, "over.md", "", ErrTooLarge, "file is 9 bytes, more than the 8 allowed"},
		{dir, "huge.md", "", ErrTooLarge, "file is 1099511627776 bytes, more than the 8 allowed"},
		{dir, "pipe.md", "", ErrNotRegular, "refused: not a regular file (a named pipe)"},
		{dir, "sub", "", ErrNotRegular, "refused: not a regular file (a directory)"},
		{dir, "out.md", "", ErrOutside, "refused: it leads outside " + dir + " (a symlink)"},
		{dir, "up.md", "", ErrOutside, "refused: it leads outside " + dir + " (a symlink)"},
		{dir, "zero.md", "", ErrOutside, "refused: it leads outside " + dir + " (a symlink)"},
		{dir, "dangling.md", "", ErrOutside, "refused: it leads outside " + dir + " (a symlink)"},
		{dir, "outdir/outside.md", "", ErrOutside, "refused: it leads outside " + dir + " (a symlink)"},
		{dir, "../outside.md", "", ErrOutside, "refused: it leads outside " + dir + " (a symlink)"},
		{dir, "missing.md", "", fs.ErrNotExist, ""},
		// /proc files report size 0: the bounded read still stops them.
		{"/proc/self", "status", "", ErrTooLarge, "file is more than the 8 bytes allowed (it grew while being read)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Open(tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var (
				got  []byte
				rerr error
			)
			done := make(chan struct{})
			go func() { defer close(done); got, rerr = d.ReadFile(tc.name, 8) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second): // a hang detector
				t.Fatal("ReadFile is blocked")
			}
			if tc.err == nil {
				if rerr != nil || string(got) != tc.want {
					t.Fatalf("= %q, %v; want %q", got, rerr, tc.want)
				}
				return
			}
			if !errors.Is(rerr, tc.err) || got != nil {
				t.Fatalf("= %q, %v; want %v", got, rerr, tc.err)
			}
			if tc.msg != "" && rerr.Error() != tc.msg {
				t.Fatalf("error %q, want %q", rerr, tc.msg)
			}
		})
	}
}

func TestReadFilePath(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.md"), "A")
	if got, err := ReadFile(filepath.Join(dir, "a.md"), 10); err != nil || string(got) != "A" {
		t.Fatalf("= %q, %v", got, err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "z.md")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(filepath.Join(dir, "z.md"), 10); !errors.Is(err, ErrOutside) {
		t.Fatalf("err = %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "nope", "a.md"), 10); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}
