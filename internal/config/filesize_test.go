package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
