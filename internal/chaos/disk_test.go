package chaos

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/loadtest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
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
				if !arrived(ch) {
					t.Fatal("no reply before the disk went read-only")
				}
				if err := r.current().Stop(eventWait); err != nil {
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
			if !arrived(proc.Done()) {
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
				st, err := bolt.Open(filepath.Join(data, "switchboard.db"), memory.Options{Timeout: time.Second})
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
	if !arrived(say(0)) {
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
	// The daemon says why it refuses them; it stays up.
	said := until(func() bool { return strings.Contains(r.output(), "no space left on device") })
	select {
	case <-r.current().Done():
		t.Fatalf("daemon died on a full disk:\n%s", r.output())
	default:
	}
	if !said {
		t.Errorf("the log does not say the disk is full:\n%s", r.output())
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
	until(func() bool { return covered() >= 4 && len(sentNow()) >= len(turns()) })
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
	if err := r.current().Stop(eventWait); err != nil {
		t.Logf("daemon exit: %v", err)
	}
	st, err := bolt.Open(filepath.Join(data, "switchboard.db"), memory.Options{Timeout: time.Second})
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

// TestDiskFullTenMessagesAllAnswered (issue 13): ten messages were accepted
// and their turns are running when the data dir's file system fills up. Each
// answer is long, so committing the turn needs new database pages the full
// disk refuses: the turns cannot be committed and their answers not recorded
// in the outbox (the model holds the ten answers until the disk is full, so
// the commits always meet it). None of the ten may be cleared unanswered.
// While writes fail /readyz says the store is the problem and the metric
// shows it; once space is freed every one of the ten is answered with its
// real answer, exactly once, without a restart, and /readyz and the metric
// recover.
func TestDiskFullTenMessagesAllAnswered(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: runs the daemon binary")
	}
	mnt := mountTmpfs(t, "8m")
	data := filepath.Join(mnt, "data")
	pad := strings.Repeat("lorem ipsum dolor sit amet ", 400) // ~11 KB per answer
	warmTok := loadtest.Token(0, 0)
	// The model answers the ten once the disk is full: their turns are
	// running then, whatever the machine's speed.
	filled := make(chan struct{})
	var fillOnce sync.Once
	fillDone := func() { fillOnce.Do(func() { close(filled) }) }
	r := newRig(t, loadtest.ModelOptions{Responder: func(req *fakellm.Request) fakellm.Response {
		if !strings.Contains(req.LastUserText(), warmTok) {
			arrived(filled)
		}
		return fakellm.Response{Content: "echo: " + req.LastUserText() + "\n\n" + pad}
	}}, loadtest.ConfigOptions{DataDir: data})
	t.Cleanup(fillDone) // before the fakes close: no model call left waiting
	r.start()
	readyz := func() (int, string) {
		resp, err := http.Get("http://" + r.addr + "/readyz")
		if err != nil {
			t.Fatalf("GET /readyz: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	warm := r.p.Expect(warmTok)
	r.p.Say(0, warmTok)
	if !arrived(warm) {
		t.Fatal("no reply before the disk filled")
	}

	// Ten messages on ten Telegram chats; once all ten turns wait for the
	// model, the disk fills.
	var toks []string
	waits := map[string]<-chan time.Time{}
	for i := range 10 {
		chat := 3 * (i + 1) // Telegram chats
		tok := loadtest.Token(chat, 1)
		toks = append(toks, tok)
		waits[tok] = r.p.Expect(tok)
		r.p.Say(chat, tok)
	}
	if !until(func() bool { return r.p.LLM.RequestCount() >= 11 }) {
		n := r.p.LLM.RequestCount()
		t.Fatalf("only %d of the 10 turns started", n-1)
	}
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
	fillDone()

	until(func() bool { return r.metric("switchboard_storage_healthy") == 0 })
	if got := r.metric("switchboard_storage_healthy"); got != 0 {
		t.Fatalf("switchboard_storage_healthy = %v on a full disk, want 0\n%s", got, r.output())
	}
	if got := r.metric("switchboard_storage_write_failures_total"); got < 1 {
		t.Errorf("switchboard_storage_write_failures_total = %v on a full disk", got)
	}
	if code, body := readyz(); code != http.StatusServiceUnavailable || !strings.Contains(body, "store") ||
		!strings.Contains(body, "no space left on device") {
		t.Errorf("/readyz on a full disk = %d %q, want 503 naming the store and the cause", code, body)
	}
	select {
	case <-r.current().Done():
		t.Fatalf("daemon died on a full disk:\n%s", r.output())
	default:
	}
	if out := r.output(); strings.Count(out, "storage writes are failing") < 1 {
		t.Errorf("no log line says the store cannot write:\n%s", out)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// Answers come one after another (paced per chat): wait while they
	// keep coming.
	var lost []string
	r.prog.note()
	for _, tok := range toks {
		if r.prog.await(context.Background(), waits[tok], eventWait) {
			r.prog.note()
		} else {
			lost = append(lost, tok)
		}
	}
	if len(lost) > 0 {
		t.Fatalf("%d of 10 messages were never answered after space came back: %q\n%s", len(lost), lost, r.output())
	}
	time.Sleep(300 * time.Millisecond) // a duplicate would land now
	t.Logf("model requests: %d; storage failures by op: accept %v, commit %v, delivery %v, clear %v", len(r.p.LLM.Requests()),
		r.metric("switchboard_storage_write_failures_total", `op="accept message"`),
		r.metric("switchboard_storage_write_failures_total", `op="commit turn"`),
		r.metric("switchboard_storage_write_failures_total", `op="record delivery"`),
		r.metric("switchboard_storage_write_failures_total", `op="clear inbox"`))
	sightings := r.p.Sightings()
	for _, tok := range toks {
		// 0 is fine: a message that joined a running turn shows up when its
		// streamed draft is edited into the final answer.
		if n := sightings[tok].Creates; n > 1 {
			t.Errorf("%s answered in %d messages, want exactly 1\n%s", tok, n, r.output())
		}
	}
	until(func() bool { code, _ := readyz(); return code == http.StatusOK })
	if code, body := readyz(); code != http.StatusOK {
		t.Errorf("/readyz after space came back = %d %q, want 200", code, body)
	}
	if got := r.metric("switchboard_storage_healthy"); got != 1 {
		t.Errorf("switchboard_storage_healthy = %v after space came back, want 1", got)
	}
	// The answers' later chunks are paced; let every session finish (and
	// clear its inbox item) before stopping.
	until(func() bool { return r.metric("switchboard_active_sessions") == 0 })
	if err := r.current().Stop(eventWait); err != nil {
		t.Logf("daemon exit: %v", err)
	}
	st, err := bolt.Open(filepath.Join(data, "switchboard.db"), memory.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Check(); err != nil {
		t.Fatalf("database corrupted after the disk filled: %v", err)
	}
	if pending, err := st.InboxPending(context.Background()); err != nil || len(pending) != 0 {
		t.Errorf("inbox after every answer: %d items, %v", len(pending), err)
	}
}
