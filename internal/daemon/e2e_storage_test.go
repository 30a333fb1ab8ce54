package daemon_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// smallDisk mounts a tmpfs of size at a fresh directory, or skips the test
// where that is not permitted (needs CAP_SYS_ADMIN).
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): the full-disk test needs CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fillDisk writes a file until the file system is full and returns its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 64<<10)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			return path
		}
	}
}

func (r *rig) metrics() string {
	r.t.Helper()
	resp, err := http.Get(r.url() + "/metrics")
	if err != nil {
		r.t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// Issue 13: while the data store cannot write (the disk is full) /readyz
// answers 503 naming the store and the cause and the metrics say so; no
// message is lost: once space is back every one is answered, and /readyz
// and the metric recover.
func TestFullDiskReadyzAndMetricsThenEveryMessageAnswered(t *testing.T) {
	mnt := smallDisk(t, "8m")
	llm := fakellm.Start(t, fakellm.Echo())
	tg := faketelegram.New(t, faketelegram.Options{})
	cfg := telegramConfig(t, llm, tg)
	cfg.Bot.DataDir = filepath.Join(mnt, "data")
	d := startDaemon(t, cfg, tg.Token())

	tg.UserSays(1001, "warm up")
	tgWaitText(t, tg, 1001, 1, is("echo: warm up"))
	filler := fillDisk(t, mnt)

	// Long messages need new pages in the database file, which a full disk
	// refuses. Send until a write fails.
	pad := strings.Repeat("lorem ipsum ", 300)
	var sent []struct {
		chat int64
		text string
	}
	for i := 0; i < 40 && d.d.Handler().StorageHealth().OK; i++ {
		chat := int64(2001 + i%5)
		text := fmt.Sprintf("m%02d %s", i, pad)
		tg.UserSays(chat, text)
		sent = append(sent, struct {
			chat int64
			text string
		}{chat, text})
		eventually(t, "the message to be answered or a write to fail", func() bool {
			if !d.d.Handler().StorageHealth().OK {
				return true
			}
			for _, m := range tg.Sent(chat) {
				if strings.Contains(m.Plain, text[:3]) {
					return true
				}
			}
			return false
		})
	}
	if d.d.Handler().StorageHealth().OK {
		t.Skip("the full disk never refused a write (bolt reused free pages for every message)")
	}
	code, body := d.readyz()
	t.Logf("a write failed after %d message(s); /readyz: %q", len(sent), body)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "store") || !strings.Contains(body, "no space left on device") {
		t.Fatalf("/readyz while the disk is full = %d %q, want 503 naming the store and the cause", code, body)
	}
	if m := d.metrics(); !strings.Contains(m, "switchboard_storage_healthy 0") || !strings.Contains(m, "switchboard_storage_write_failures_total{") {
		t.Fatalf("metrics while the disk is full lack the storage failure:\n%s", grepLines(m, "switchboard_storage"))
	}
	if n := strings.Count(d.log.String(), "storage writes are failing"); n < 1 {
		t.Fatalf("no ERROR line says the store cannot write")
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for _, s := range sent {
		tgWaitText(t, tg, s.chat, 1, has(s.text[:3]))
	}
	for _, s := range sent {
		n := 0
		for _, m := range tg.Sent(s.chat) {
			if strings.Contains(m.Plain, s.text[:3]) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s answered %d times", s.text[:3], n)
		}
	}
	eventually(t, "/readyz 200 once the store writes again", func() bool {
		code, _ := d.readyz()
		return code == http.StatusOK
	})
	if m := d.metrics(); !strings.Contains(m, "switchboard_storage_healthy 1") {
		t.Fatalf("metric did not recover:\n%s", grepLines(m, "switchboard_storage"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
