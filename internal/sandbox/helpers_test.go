package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bwrapRunner returns a bwrap Runner whose Check passed, or skips the test
// saying what to install.
func bwrapRunner(t testing.TB, o Options) *Runner {
	t.Helper()
	r, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := r.Check(context.Background()); err != nil {
		t.Skipf("skipped: no working bubblewrap here (%v); install it with apt-get install bubblewrap", err)
	}
	return r
}

// marker is a unique string a test puts in a command line, so the host's
// /proc can be searched for any process of that command left behind.
func marker(t testing.TB) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "sbmark" + hex.EncodeToString(b)
}

// processesWith lists host processes whose command line contains s.
func processesWith(t testing.TB, s string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := []byte(s)
	var found []string
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, self) {
			continue
		}
		// A zombie has an empty cmdline; anything found is alive.
		found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
	}
	return found
}

func assertNoSurvivors(t *testing.T, mark string) {
	t.Helper()
	if left := processesWith(t, mark); len(left) > 0 {
		t.Errorf("processes of the command survived Run:\n%s", strings.Join(left, "\n"))
	}
}

func fileMap(files []File) map[string]string {
	m := make(map[string]string, len(files))
	for _, f := range files {
		m[f.Path] = string(f.Data)
	}
	return m
}
