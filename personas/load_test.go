package personas

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadSkipsMalformedFilesAndLoadsTheRest(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "assistant.md"), "---\ndescription: Helpful\n---\nYou help.\n")
	writeFile(t, filepath.Join(dir, "buddy.md"), "---\ndescription: Casual\ntools: []\n---\nYou chat.\n")
	writeFile(t, filepath.Join(dir, "broken.md"), "---\ndescription: x\ncolour: blue\n---\nbody\n")
	writeFile(t, filepath.Join(dir, "nofront.md"), "Just text\n")
	writeFile(t, filepath.Join(dir, "Bad_Name.md"), "---\n---\nbody\n")
	writeFile(t, filepath.Join(dir, "notes.txt"), "not a persona")
	writeFile(t, filepath.Join(dir, ".swap.md"), "garbage")
	if err := os.Mkdir(filepath.Join(dir, "sub.md"), 0o755); err != nil {
		t.Fatal(err)
	}

	set, errs := Load(dir)
	if got, want := set.Names(), []string{"assistant", "buddy"}; !reflect.DeepEqual(got, want) {
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
	want := []string{
		filepath.Join(dir, "Bad_Name.md") + `: persona name "Bad_Name"`,
		filepath.Join(dir, "broken.md") + `:3: unknown key "colour"`,
		filepath.Join(dir, "nofront.md") + `:1: missing front matter`,
	}
	if len(msgs) != len(want) {
		t.Fatalf("errors = %q, want %d errors", msgs, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(msgs[i], want[i]) {
			t.Errorf("error %d = %q, want prefix %q", i, msgs[i], want[i])
		}
	}
	b, ok := set.Get("buddy")
	if !ok || b.Tools == nil || len(b.Tools) != 0 || b.File != filepath.Join(dir, "buddy.md") {
		t.Fatalf("buddy = %+v, %v", b, ok)
	}
	if _, ok := set.Get("broken"); ok {
		t.Fatal("broken persona was loaded")
	}
}

func TestLoadMissingDirectory(t *testing.T) {
	set, errs := Load(filepath.Join(t.TempDir(), "nope"))
	if set == nil || set.Len() != 0 {
		t.Fatalf("set = %v", set)
	}
	if len(errs) != 1 || !errors.Is(errs[0], fs.ErrNotExist) {
		t.Fatalf("errs = %v", errs)
	}
}

func TestSetIsImmutable(t *testing.T) {
	set, err := NewSet(Persona{Name: "a", Identity: "x", Tools: []string{"t1"}, Temperature: f32(0.5)})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := set.Get("a")
	p.Tools[0] = "changed"
	*p.Temperature = 2
	set.Names()[0] = "z"
	again, _ := set.Get("a")
	if again.Tools[0] != "t1" || *again.Temperature != 0.5 || set.Names()[0] != "a" {
		t.Fatalf("Set changed through a returned value: %+v %v", again, set.Names())
	}
	if _, err := NewSet(Persona{Name: "a"}, Persona{Name: "a"}); err == nil {
		t.Fatal("duplicate names accepted")
	}
	if _, err := NewSet(Persona{Name: "A"}); err == nil {
		t.Fatal("invalid name accepted")
	}
}

// The agent.PersonaSource half of this test moved to channels/hub
// (TestSetSourcePersona), with the conversion to agent.Persona.
func TestSetDefaultAndPersonaSource(t *testing.T) {
	set, _ := NewSet(Persona{Name: "zeta", Identity: "Z"}, Persona{Name: "beta", Identity: "B", Language: "French"})
	if set.Default() != "beta" {
		t.Fatalf("Default without assistant = %q, want the first name", set.Default())
	}
	withZ, err := set.WithDefault("zeta")
	if err != nil || withZ.Default() != "zeta" || set.Default() != "beta" {
		t.Fatalf("WithDefault: %v, %q, original %q", err, withZ.Default(), set.Default())
	}
	if _, err := set.WithDefault("nope"); !errors.Is(err, ErrUnknownPersona) {
		t.Fatalf("WithDefault(nope) err = %v", err)
	}
	if _, ok := set.Get("nope"); ok {
		t.Fatal("unknown persona found")
	}
	var empty *Set
	if empty.Default() != "" || empty.Len() != 0 || len(empty.Names()) != 0 {
		t.Fatal("nil Set is not empty")
	}
}

func TestCheckRulesAndTools(t *testing.T) {
	set := Builtin()
	errs := set.CheckRules(map[string]string{"slack:C1": "reporter", "slack:C2": "poet"}, map[string]string{"discord": "bud"}, "assistant")
	var got []string
	for _, e := range errs {
		if !errors.Is(e, ErrUnknownPersona) {
			t.Errorf("%v does not wrap ErrUnknownPersona", e)
		}
		got = append(got, e.Error())
	}
	want := []string{
		`personas.by_target.slack:C2: unknown persona "poet" (available: assistant, buddy, reporter)`,
		`personas.by_channel.discord: unknown persona "bud" (available: assistant, buddy, reporter)`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("CheckRules = %q\nwant %q", got, want)
	}
	terrs := set.CheckTools([]string{"current_time", "memory"})
	if len(terrs) == 0 || !strings.Contains(terrs[0].Error(), `unknown tool "web_fetch"`) {
		t.Fatalf("CheckTools = %v", terrs)
	}
}

func TestWriteDefaultsFirstRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "personas")
	written, err := WriteDefaults(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 3 {
		t.Fatalf("written = %v", written)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("dir mode = %v, %v", fi.Mode(), err)
	}
	for _, n := range []string{"assistant", "buddy", "reporter"} {
		path := filepath.Join(dir, n+".md")
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o644 {
			t.Fatalf("%s: mode %v, %v", path, fi.Mode(), err)
		}
		want, _ := DefaultFile(n)
		if got, _ := os.ReadFile(path); string(got) != string(want) {
			t.Fatalf("%s content differs from the embedded default", path)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Fatalf("directory holds %d entries (temporary files left?)", len(entries))
	}
	set, errs := Load(dir)
	if len(errs) != 0 || set.Len() != 3 {
		t.Fatalf("Load after WriteDefaults: %v, %v", set.Names(), errs)
	}
}

func TestWriteDefaultsNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	if _, err := WriteDefaults(dir); err != nil { // existing empty dir = first run
		t.Fatal(err)
	}
	edited := "---\ndescription: Our assistant\n---\nYou are ACME's helper.\n"
	assistant := filepath.Join(dir, "assistant.md")
	writeFile(t, assistant, edited)
	if err := os.Remove(filepath.Join(dir, "buddy.md")); err != nil { // the operator does not want buddy
		t.Fatal(err)
	}

	written, err := WriteDefaults(dir)
	if err != nil || len(written) != 0 {
		t.Fatalf("second run wrote %v, %v", written, err)
	}
	if got, _ := os.ReadFile(assistant); string(got) != edited {
		t.Fatalf("edited file overwritten: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "buddy.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("deleted default came back: %v", err)
	}
	set, _ := Load(dir)
	if p, _ := set.Get("assistant"); p.Identity != "You are ACME's helper." {
		t.Fatalf("assistant = %+v", p)
	}
}

func TestWriteNewDoesNotReplaceAnExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reporter.md")
	writeFile(t, path, "mine")
	ok, err := writeNew(path, []byte("default"))
	if err != nil || ok {
		t.Fatalf("writeNew over an existing file = %v, %v", ok, err)
	}
	if got, _ := os.ReadFile(path); string(got) != "mine" {
		t.Fatalf("file replaced: %q", got)
	}
}
