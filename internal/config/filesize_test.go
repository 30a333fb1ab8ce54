package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A config file far larger than any configuration is refused before it is
// decoded, by Load and by the editor, with the limit in the message.
func TestOversizedConfigFileRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	big := "bot:\n  name: x\n# " + strings.Repeat("a", MaxFileSize) + "\n"
	if err := os.WriteFile(path, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, run := range map[string]func() error{
		"load": func() error { _, err := Load(path); return err },
		"set":  func() error { return SetInFile(path, "bot.name", "y") },
	} {
		err := run()
		if err == nil || !strings.Contains(err.Error(), "larger than 1024 KiB") {
			t.Errorf("%s: err = %v, want the size limit named", name, err)
		}
	}
	after, err := os.ReadFile(path)
	if err != nil || string(after) != big {
		t.Fatal("the oversized file was changed")
	}
}

// Issue B4: a config file that is not a regular file (a named pipe, a
// device) is refused at once, with the file named, by Load, by the editor
// and by ReadFile (the console's config page): never a hang, never read.
func TestConfigFileNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "config.yaml")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, kind string }{{pipe, "a named pipe"}, {zero, "a character device"}, {"/dev/zero", "a character device"}} {
		for name, run := range map[string]func() error{
			"load":     func() error { _, err := Load(c.path); return err },
			"set":      func() error { return SetInFile(c.path, "bot.name", "y") },
			"readfile": func() error { _, err := ReadFile(c.path); return err },
		} {
			done := make(chan error, 1)
			go func() { done <- run() }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), "not a regular file ("+c.kind+")") {
					t.Errorf("%s %s: err = %v, want it refused as not a regular file, naming the file", name, c.path, err)
				}
			case <-time.After(time.Minute): // a hang detector
				t.Fatalf("%s hangs on %s", name, c.path)
			}
		}
	}
	if fi, err := os.Lstat(pipe); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the named pipe was replaced (%v)", err)
	}
}
