package chaos

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/loadtest"
	"github.com/switchboard-bot/switchboard/memory"
)

// mountTmpfs mounts a tmpfs of size bytes at a fresh directory, or skips the
// test where mounting is not permitted (needs CAP_SYS_ADMIN; a read-only or
// full disk cannot be simulated reliably otherwise when running as root,
// which ignores file modes).
// tokenRE matches the harness's message tokens.
var tokenRE = regexp.MustCompile(`q[0-9]+x[0-9]+z`)

func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): disk-full and read-only tests need CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

func remountReadOnly(t *testing.T, dir string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
}

// TestReadOnlyDataDirClearError: a daemon whose data dir is on a read-only
// file system (fresh, or holding a database from an earlier run) exits at
// start with an error naming the file and the cause, and leaves the
// existing database intact.
func TestReadOnlyDataDirClearError(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: runs the daemon binary")
	}
	for _, existing := range []bool{false, true} {
		name := "fresh"
		if existing {
			name = "existing database"
		}
		t.Run(name, func(t *testing.T) {
			mnt := mountTmpfs(t, "16m")
			data := filepath.Join(mnt, "data")
			r := newRig(t, loadtest.ModelOptions{}, loadtest.ConfigOptions{DataDir: data})
			if existing {
				r.start()
				ch := r.p.Expect(loadtest.Token(0, 0))
				r.p.Say(0, loadtest.Token(0, 0))
				select {
				case <-ch:
				case <-time.After(10 * time.Second):
					t.Fatal("no reply before the disk went read-only")
				}
				if err := r.current().Stop(10 * time.Second); err != nil {
					t.Fatalf("stop: %v", err)
				}
			} else if err := os.MkdirAll(data, 0o700); err != nil {
				t.Fatal(err)
			}
			remountReadOnly(t, mnt)

			proc, err := loadtest.StartProc(r.bin, r.cfg, r.addr, r.p.Env())
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-proc.Done():
			case <-time.After(15 * time.Second):
				proc.Kill()
				t.Fatalf("daemon kept running on a read-only data dir:\n%s", proc.Output())
			}
			var exit *exec.ExitError
			if err := proc.Err(); err == nil || !errors.As(err, &exit) {
				t.Fatalf("daemon exited with %v, want a failure exit code", err)
			}
			out := proc.Output()
			for _, want := range []string{"switchboard.db", "read-only file system"} {
				if !strings.Contains(out, want) {
					t.Errorf("start error does not mention %q:\n%s", want, out)
				}
			}
			if strings.Count(strings.TrimSpace(out), "\n") > 5 {
				t.Errorf("start error is not short and clear:\n%s", out)
			}
			if existing {
				if err := syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_REMOUNT, ""); err != nil {
					t.Fatalf("remount read-write: %v", err)
				}
				st, err := memory.Open(filepath.Join(data, "switchboard.db"), memory.Options{Timeout: time.Second})
				if err != nil {
					t.Fatalf("open the database read-only after the failed start: %v", err)
				}
				defer st.Close()
				if err := st.Check(); err != nil {
					t.Errorf("database corrupted: %v", err)
				}
			}
		})
	}
}

// TestDiskFullNoLossNoCorruption fills the data dir's file system while the
// daemon runs: messages arriving then are refused (not acknowledged, so
// Telegram keeps them), the daemon stays up and says why in its log, and once
// space is freed every message is answered exactly once; the database passes
// bolt's consistency check.
func TestDiskFullNoLossNoCorruption(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: runs the daemon binary")
	}
	mnt := mountTmpfs(t, "8m")
	data := filepath.Join(mnt, "data")
	r := newRig(t, loadtest.ModelOptions{}, loadtest.ConfigOptions{DataDir: data})
	r.start()
	const chat = 0 // Telegram
	say := func(seq int) <-chan time.Time {
		tok := loadtest.Token(chat, seq)
		ch := r.p.Expect(tok)
		r.p.Say(chat, tok)
		return ch
	}
	select {
	case <-say(0):
	case <-time.After(10 * time.Second):
		t.Fatal("no reply before the disk filled")
	}

	// Fill the file system.
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	block := make([]byte, 64<<10)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			break
		}
	}
	f.Close()

	for seq := 1; seq <= 3; seq++ {
		say(seq)
	}
	time.Sleep(700 * time.Millisecond)
	select {
	case <-r.current().Done():
		t.Fatalf("daemon died on a full disk:\n%s", r.output())
	default:
	}
	if out := r.output(); !strings.Contains(out, "no space left on device") {
		t.Errorf("the log does not say the disk is full:\n%s", out)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// Messages refused while the disk was full come back (Telegram keeps
	// them) and are answered now. Messages that arrive while a turn runs
	// join the next turn (one answer covers them), and a turn whose commit
	// failed on the full disk is answered with the friendly error ("please
	// try again"). So: every message is in exactly one model turn, and every
	// turn gets exactly one reply — never none, never two.
	turns := func() [][]string {
		var out [][]string
		for _, req := range r.p.LLM.Requests() {
			out = append(out, tokenRE.FindAllString(req.LastUserText(), -1))
		}
		return out
	}
	covered := func() int {
		n := 0
		for _, tt := range turns() {
			n += len(tt)
		}
		return n
	}
	sentNow := func() []string {
		var out []string
		for _, m := range r.p.Telegram.Sent(loadtest.TelegramChatID(chat)) {
			out = append(out, m.Plain)
		}
		return out
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && (covered() < 4 || len(sentNow()) < len(turns())) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // a duplicate would land now
	sent, tt := sentNow(), turns()
	seen := map[string]int{}
	for _, turn := range tt {
		for _, tok := range turn {
			seen[tok]++
		}
	}
	for seq := range 4 {
		if n := seen[loadtest.Token(chat, seq)]; n != 1 {
			t.Errorf("message %s reached the model %d times, want once (turns %q)", loadtest.Token(chat, seq), n, tt)
		}
	}
	if len(sent) != len(tt) {
		t.Fatalf("bot sent %d messages for %d turns: %q (turns %q)\n%s", len(sent), len(tt), sent, tt, r.output())
	}
	for i, turn := range tt {
		reply := sent[i]
		if strings.Contains(reply, "try again") {
			continue
		}
		for _, tok := range turn {
			if !strings.Contains(reply, tok) {
				t.Errorf("turn %d (%q) answered with %q", i+1, turn, reply)
			}
		}
	}
	t.Logf("turns %q; bot said %q", tt, sent)
	if err := r.current().Stop(10 * time.Second); err != nil {
		t.Logf("daemon exit: %v", err)
	}
	st, err := memory.Open(filepath.Join(data, "switchboard.db"), memory.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Check(); err != nil {
		t.Fatalf("database corrupted after the disk filled: %v", err)
	}
	hist, err := st.LoadHistory(context.Background(), sessionKey(chat), 100)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, m := range hist {
		if m.Role == "user" {
			users = append(users, m.Content)
		}
	}
	joined := strings.Join(users, "\n")
	for seq := range 4 {
		// A turn whose commit failed is not in the history (all or nothing);
		// a batched turn holds its messages in one user message.
		if n := strings.Count(joined, loadtest.Token(chat, seq)); n > 1 {
			t.Errorf("history holds %s %d times, want at most once: %q", loadtest.Token(chat, seq), n, users)
		}
	}
}
