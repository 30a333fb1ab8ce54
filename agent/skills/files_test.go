package skills

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// hangLimit is how long an operation that must not block gets before the
// test calls it hung (a hang detector, not a performance bound).
const hangLimit = time.Minute

// noHang runs op and fails the test if it has not returned within
// hangLimit. unblock (optional) is run if it hung, to free the goroutine.
func noHang(t *testing.T, what string, unblock func(), op func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		op()
	}()
	select {
	case <-done:
	case <-time.After(hangLimit):
		if unblock != nil {
			unblock()
		}
		t.Fatalf("%s did not return: it is blocked (on a FIFO?)", what)
	}
}

// mkfifo makes a named pipe at path; releaseFIFO opens its write end
// without blocking and closes it, which frees a reader blocked in open.
func mkfifo(t *testing.T, path string) func() {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return func() {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = f.Close()
		}
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// Issue 27 (5): only regular files inside skills.dir are read, without
// blocking and bounded. A FIFO named SKILL.md, a huge file, a symlink that
// leads out of the directory (to a file, to a folder, to /dev/zero) are
// each reported once with a clear reason and skipped; the other skills
// load, symlinks that stay inside the directory included.
func TestLibraryRefusesSpecialFiles(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "skills")
	outside := filepath.Join(root, "elsewhere")
	writeSkill(t, dir, "greet", skillFile("greet", "Greet people.", "Say hi."))
	release := mkfifo(t, filepath.Join(dir, "pipe", FileName))
	huge := filepath.Join(dir, "huge", FileName)
	writeSkill(t, dir, "huge", skillFile("huge", "Huge.", "x"))
	if err := os.Truncate(huge, 1<<30); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	writeSkill(t, outside, "outfile", skillFile("outfile", "Lives outside.", "Secret instructions."))
	symlink(t, filepath.Join(outside, "outfile", FileName), filepath.Join(dir, "outfile", FileName))
	writeSkill(t, outside, "outdir", skillFile("outdir", "A folder outside.", "Outside folder."))
	symlink(t, filepath.Join(outside, "outdir"), filepath.Join(dir, "outdir"))
	symlink(t, "/dev/zero", filepath.Join(dir, "zero", FileName))
	// Inside the directory: a symlinked skill folder and a symlinked SKILL.md.
	writeSkill(t, filepath.Join(dir, ".store"), "indir", skillFile("indir", "Folder linked from inside.", "In."))
	symlink(t, filepath.Join(".store", "indir"), filepath.Join(dir, "indir"))
	writeSkill(t, filepath.Join(dir, ".store"), "infile", skillFile("infile", "File linked from inside.", "In file."))
	symlink(t, filepath.Join("..", ".store", "infile", FileName), filepath.Join(dir, "infile", FileName))

	var logs lockedBuffer
	lib := NewLibrary(dir, Options{ReloadInterval: -1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	var got string
	noHang(t, "Library.Skills", release, func() { got = names(lib) })
	if want := "greet=Greet people.,indir=Folder linked from inside.,infile=File linked from inside."; got != want {
		t.Fatalf("skills %q, want %q", got, want)
	}
	probs := lib.Problems()
	wants := []string{
		filepath.Join(dir, "huge", FileName) + ": file is 1073741824 bytes, more than the 262144 allowed",
		filepath.Join(dir, "outdir", FileName) + ": refused: it leads outside " + dir + " (a symlink)",
		filepath.Join(dir, "outfile", FileName) + ": refused: it leads outside " + dir + " (a symlink)",
		filepath.Join(dir, "pipe", FileName) + ": refused: not a regular file (a named pipe)",
		filepath.Join(dir, "zero", FileName) + ": refused: it leads outside " + dir + " (a symlink)",
	}
	var msgs []string
	for _, p := range probs {
		var pe *ParseError
		if !errors.As(p, &pe) {
			t.Errorf("problem %v is not a *ParseError", p)
		}
		msgs = append(msgs, p.Error())
	}
	slices.Sort(msgs)
	if strings.Join(msgs, "\n") != strings.Join(wants, "\n") {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(wants, "\n"))
	}
	// Reported once per load, not on every use.
	for range 3 {
		noHang(t, "Library.Skills", release, func() { lib.Skills() })
	}
	if n := strings.Count(logs.String(), "skill skipped"); n != len(wants) {
		t.Fatalf("%d skip warnings, want %d (once each):\n%s", n, len(wants), logs.String())
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "named pipe") {
		t.Fatalf("logs:\n%s", logs.String())
	}
	if s, ok := lib.Get("indir"); !ok || s.Body != "In." {
		t.Fatalf("Get(indir) = %+v, %v", s, ok)
	}
}

// Issue 27 (5): a FIFO named SKILL.md used to stop every turn until
// something wrote to it. The turn (prompt and skill tool call) returns.
func TestFIFOSkillDoesNotWedgeTheTurn(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "greet", skillFile("greet", "Greet people in pirate speak.", "Always say \"Arr, matey!\" first."))
	release := mkfifo(t, filepath.Join(dir, "pipe", FileName))
	lib := NewLibrary(dir, Options{ReloadInterval: -1})
	a, srv := newSkillAgent(t, lib, func(r *fakellm.Request) fakellm.Response {
		if len(r.ToolResults()) > 0 {
			return fakellm.Response{Content: "done"}
		}
		return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: ToolName, Arguments: `{"name":"pipe"}`}}}
	})
	var (
		res agent.Result
		err error
	)
	noHang(t, "the turn", release, func() {
		res, err = a.ProcessMessage(context.Background(), agent.Request{SessionKey: "s", Text: "hi"})
	})
	if err != nil || res.Text != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	sys := srv.Requests()[0].SystemPrompt()
	if !strings.Contains(sys, "- greet: Greet people in pirate speak.") || strings.Contains(sys, "pipe") {
		t.Fatalf("system prompt:\n%s", sys)
	}
	if out := srv.LastRequest().ToolResults()[0].Content; !strings.Contains(out, `no skill named "pipe"; available: greet`) {
		t.Fatalf("tool result: %s", out)
	}
}
