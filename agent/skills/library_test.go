package skills

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func names(l *Library) string {
	var out []string
	for _, s := range l.Skills() {
		out = append(out, s.Name+"="+s.Description)
	}
	return strings.Join(out, ",")
}

// Issue 16: hot reload. Added, changed, broken, fixed and removed skills
// show at the next check after ReloadInterval; a broken edit drops only
// that skill and is reported with file:line.
func TestLibraryHotReload(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "skills")
	clk := &testClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	lib := NewLibrary(dir, Options{ReloadInterval: time.Second, Now: clk.now})
	if got := names(lib); got != "" || len(lib.Problems()) != 0 {
		t.Fatalf("missing dir: %q %v", got, lib.Problems())
	}
	writeSkill(t, dir, "a", skillFile("a", "First.", "A."))
	if got := names(lib); got != "" {
		t.Fatalf("reloaded before the interval: %q", got)
	}
	clk.add(time.Second)
	if got := names(lib); got != "a=First." {
		t.Fatalf("after adding a: %q", got)
	}
	steps := []struct {
		name   string
		change func()
		want   string
		prob   string
	}{
		{"add b", func() { writeSkill(t, dir, "b", skillFile("b", "Second.", "B.")) }, "a=First.,b=Second.", ""},
		{"edit a", func() { writeSkill(t, dir, "a", skillFile("a", "First, edited.", "A.")) }, "a=First, edited.,b=Second.", ""},
		{"break b", func() { writeSkill(t, dir, "b", "---\nname: b\ndescription: [x\n---\nB.\n") }, "a=First, edited.", filepath.Join(dir, "b", FileName) + ":3: invalid YAML"},
		{"fix b", func() { writeSkill(t, dir, "b", skillFile("b", "Second again.", "B.")) }, "a=First, edited.,b=Second again.", ""},
		{"remove a", func() { _ = os.RemoveAll(filepath.Join(dir, "a")) }, "b=Second again.", ""},
	}
	for _, st := range steps {
		st.change()
		clk.add(time.Second)
		if got := names(lib); got != st.want {
			t.Fatalf("%s: skills %q, want %q", st.name, got, st.want)
		}
		probs := errors.Join(lib.Problems()...)
		if (st.prob == "") != (probs == nil) || (probs != nil && !strings.Contains(probs.Error(), st.prob)) {
			t.Fatalf("%s: problems %v, want %q", st.name, probs, st.prob)
		}
	}
	if s, ok := lib.Get("b"); !ok || s.Body != "B." {
		t.Fatalf("Get(b) = %+v, %v", s, ok)
	}
}
