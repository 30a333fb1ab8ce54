package yamledit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fields(names ...string) []Seg {
	out := make([]Seg, len(names))
	for i, n := range names {
		out[i] = Seg{Kind: Field, Name: n}
	}
	return out
}

func edit(t *testing.T, src string, path []Seg, key string, str bool, op func(*Editor) error) string {
	t.Helper()
	e, err := New([]byte(src), path, key, str)
	if err != nil {
		t.Fatal(err)
	}
	if err := op(e); err != nil {
		t.Fatal(err)
	}
	out, err := e.Result()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

const doc = `# top comment
llm:
  model: gpt-4o-mini   # the model
  # about retries
  max_retries: 3
jobs:
  - name: daily
    schedule: "0 9 * * *"
`

func TestSetKeepsCommentsAndColumns(t *testing.T) {
	got := edit(t, doc, fields("llm", "model"), "llm.model", true, func(e *Editor) error { return e.Set("gpt-4o") })
	want := strings.Replace(doc, "model: gpt-4o-mini   # the model", "model: gpt-4o        # the model", 1)
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestSetKeepsQuotingAndAddsMissingKeys(t *testing.T) {
	path := []Seg{{Kind: Field, Name: "jobs"}, {Kind: Item, Name: "daily"}, {Kind: Field, Name: "schedule"}}
	got := edit(t, doc, path, "jobs.daily.schedule", true, func(e *Editor) error { return e.Set("0 10 * * *") })
	if !strings.Contains(got, `schedule: "0 10 * * *"`) || !strings.HasPrefix(got, "# top comment\n") {
		t.Errorf("got\n%s", got)
	}
	got = edit(t, doc, fields("llm", "timeout"), "llm.timeout", false, func(e *Editor) error { return e.Set("30s") })
	if !strings.Contains(got, "  max_retries: 3\n  timeout: 30s\n") {
		t.Errorf("new key not inserted in its section:\n%s", got)
	}
}

func TestSetAppendsNamedItem(t *testing.T) {
	path := []Seg{{Kind: Field, Name: "jobs"}, {Kind: Item, Name: "weekly"}}
	got := edit(t, doc, path, "jobs.weekly", false, func(e *Editor) error { return e.Set(`{schedule: "@weekly", prompt: p}`) })
	if !strings.Contains(got, "name: weekly") || !strings.Contains(got, "name: daily") {
		t.Errorf("got\n%s", got)
	}
	e, _ := New([]byte(doc), path, "jobs.weekly", false)
	if err := e.Set("3"); err == nil || !strings.Contains(err.Error(), `no job named "weekly"`) {
		t.Errorf("scalar for a new job: %v", err)
	}
}

func TestUnsetAndNoChange(t *testing.T) {
	got := edit(t, doc, fields("llm", "max_retries"), "llm.max_retries", false, (*Editor).Unset)
	if strings.Contains(got, "max_retries") || !strings.Contains(got, "# the model") {
		t.Errorf("got\n%s", got)
	}
	e, _ := New([]byte(doc), fields("llm", "temperature"), "llm.temperature", false)
	if err := e.Unset(); !errors.Is(err, ErrNoChange) {
		t.Errorf("unset of an absent key: %v", err)
	}
	e, _ = New([]byte(doc), fields("llm", "max_retries"), "llm.max_retries", false)
	if err := e.Set("3"); !errors.Is(err, ErrNoChange) {
		t.Errorf("same value: %v", err)
	}
}

func TestEmptyDocumentAndHasKey(t *testing.T) {
	got := edit(t, "", fields("bot", "name"), "bot.name", true, func(e *Editor) error { return e.Set("Bob") })
	if got != "bot:\n  name: Bob\n" {
		t.Errorf("got %q", got)
	}
	if !HasKey([]byte(doc), "llm.max_retries") || HasKey([]byte(doc), "llm.nope") || HasKey([]byte("- a"), "a") {
		t.Error("HasKey")
	}
}

func TestWriteAtomicKeepsMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := WriteAtomic(p, []byte("a: 1\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v %v", st.Mode(), err)
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Errorf("temp files left: %v", ents)
	}
}
