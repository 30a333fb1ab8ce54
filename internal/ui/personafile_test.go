package ui_test

import (
	"html"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Issue 27 (5): a persona file that is not a regular file (here a FIFO)
// used to hang the console's persona editor until something wrote to it.
// The page answers at once with the reason, and a save over it is refused
// with nothing written. (The client's timeout is the hang detector.)
func TestPersonaEditRefusesFIFO(t *testing.T) {
	r := startConsole(t, cOptions{})
	c := newClient(t, r.base)
	c.login(cAdminToken)
	fifo := filepath.Join(r.dir, "personas", "pipe.md")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() { // frees a handler blocked in open (today's code)
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = f.Close()
		}
	})
	want := fifo + ": refused: not a regular file (a named pipe)"
	got := c.get("/ui/personas/edit?name=pipe")
	if got.Code != http.StatusUnprocessableEntity || !strings.Contains(html.UnescapeString(got.Body), want) {
		t.Fatalf("edit page = %d, want 422 with %q:\n%s", got.Code, want, got.Body)
	}
	text := "---\ndescription: Piped\n---\nYou pipe.\n"
	got = c.post("/ui/personas/save", url.Values{"name": {"pipe"}, "base": {""}, "text": {text}})
	if got.Code != http.StatusUnprocessableEntity || !strings.Contains(html.UnescapeString(got.Body), want) {
		t.Fatalf("save = %d, want 422 with %q:\n%s", got.Code, want, got.Body)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v, %v", fi, err)
	}
}
