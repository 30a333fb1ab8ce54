package personas

import (
	"os"
	"path/filepath"
	"testing"
)

// Issue 13: the built-ins resolve by name whatever the directory holds; a
// file of a built-in's name overrides it.
func TestWithBuiltins(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("zebra.md", "---\ndescription: Z\n---\nZebra.\n")
	write("buddy.md", "---\ndescription: Mine\n---\nMy buddy.\n")
	loaded, errs := Load(dir)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	set := WithBuiltins(loaded)
	if got := set.Names(); len(got) != 4 || got[0] != "assistant" || got[3] != "zebra" {
		t.Fatalf("names %v", got)
	}
	if set.Default() != "assistant" {
		t.Fatalf("default %q, want assistant (not zebra)", set.Default())
	}
	if p, _ := set.Get("buddy"); p.Identity != "My buddy." {
		t.Fatalf("buddy.md did not override the built-in: %q", p.Identity)
	}
	if p, ok := set.Get("reporter"); !ok || p.Identity == "" {
		t.Fatal("the built-in reporter does not resolve")
	}
	if WithBuiltins(nil).Len() != 3 {
		t.Fatal("WithBuiltins(nil) is not the built-ins")
	}
}
