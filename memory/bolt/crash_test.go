package bolt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

// helperEnv switches the test binary into a helper process (the standard Go
// helper-process pattern): TestHelperProcess runs the mode named by the
// variable against the database at helperPathEnv.
const (
	helperEnv     = "SWITCHBOARD_MEMORY_HELPER"
	helperPathEnv = "SWITCHBOARD_MEMORY_HELPER_DB"
)

// TestHelperProcess is not a test: it is the child process body.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process body; runs only when re-executed by another test")
	}
	path := os.Getenv(helperPathEnv)
	var err error
	switch mode {
	case "append":
		err = helperAppend(path)
	case "hold":
		err = helperHold(path)
	default:
		err = fmt.Errorf("unknown helper mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// crashTurn is turn n of writer w: user, tool call, tool result, answer. The
// messages carry padding so turns span pages and commits take real work.
func crashTurn(w, n int) memory.Turn {
	tag := fmt.Sprintf("w%d-n%d", w, n)
	pad := strings.Repeat("x", 700)
	return memory.Turn{ID: tag, Answer: "answer " + tag, Messages: []memory.Message{
		{Role: memory.RoleUser, Content: "question " + tag + " " + pad},
		{Role: memory.RoleAssistant, ToolCalls: []memory.ToolCall{{ID: "call-" + tag, Name: "current_time", Arguments: `{"tag":"` + tag + `"}`}}},
		{Role: memory.RoleTool, ToolCallID: "call-" + tag, Name: "current_time", Content: "result " + tag + " " + pad},
		{Role: memory.RoleAssistant, Content: "answer " + tag},
	}}
}

// helperAppend appends turns from several goroutines forever (real fsync),
// printing "committed <writer> <n>" after each AppendTurn returns.
func helperAppend(path string) error {
	s, err := Open(path, memory.Options{Timeout: 5 * time.Second})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	errc := make(chan error, 4)
	for w := 0; w < 4; w++ {
		go func() {
			for n := 0; ; n++ {
				if err := s.AppendTurn(context.Background(), fmt.Sprintf("crash:%d", w), crashTurn(w, n)); err != nil {
					errc <- err
					return
				}
				mu.Lock()
				fmt.Fprintf(out, "committed %d %d\n", w, n)
				err := out.Flush()
				mu.Unlock()
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	return <-errc
}

// helperHold opens the database, says "locked" and holds it until stdin closes.
func helperHold(path string) error {
	s, err := Open(path, memory.Options{Timeout: 5 * time.Second})
	if err != nil {
		return err
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return s.Close()
}

func helperCommand(t *testing.T, mode, path string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperPathEnv+"="+path)
	cmd.Stderr = os.Stderr
	return cmd
}

// TestKilledWriterLeavesWholeTurns stays here rather than in memory/storetest:
// the writer is this test binary re-executed (TestHelperProcess above), so the
// child must be built from the backend's own package.
func TestKilledWriterLeavesWholeTurns(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	path := filepath.Join(t.TempDir(), FileName)
	cmd := helperCommand(t, "append", path)
	stdout, err := cmd.StdoutPipe()
	mustNo(t, err)
	mustNo(t, cmd.Start())
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()

	// Read commit reports until enough turns are durable, then SIGKILL the
	// child while its writers are in the middle of further commits.
	const wantCommits = 150
	committed := map[int]int{} // writer → highest turn reported committed
	sc := bufio.NewScanner(stdout)
	total := 0
	for total < wantCommits && sc.Scan() {
		var w, n int
		if _, err := fmt.Sscanf(sc.Text(), "committed %d %d", &w, &n); err != nil {
			continue // test framework output
		}
		committed[w] = n
		total++
	}
	if total < wantCommits {
		t.Fatalf("child stopped after %d commits: %v", total, sc.Err())
	}
	mustNo(t, cmd.Process.Signal(syscall.SIGKILL))
	killed = true
	err = cmd.Wait()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die from SIGKILL: %v", err)
	}

	s := openAt(t, path, memory.Options{Timeout: time.Second})
	mustNo(t, s.Check())
	ctx := context.Background()
	for w := 0; w < 4; w++ {
		key := fmt.Sprintf("crash:%d", w)
		turns, err := s.SessionTurns(ctx, key)
		mustNo(t, err)
		meta, _, err := s.Session(ctx, key)
		mustNo(t, err)
		// Every turn the child reported as committed is there (durability)...
		if last, ok := committed[w]; ok && len(turns) < last+1 {
			t.Errorf("%s: %d turns on disk, but turn %d was reported committed", key, len(turns), last)
		}
		// ...and every turn on disk is whole, in order, and counted in the metadata.
		for n, turn := range turns {
			if !reflectEqualTurn(turn, crashTurn(w, n)) {
				t.Errorf("%s: turn %d is not whole: %+v", key, n, turn)
			}
		}
		t.Logf("%s: %d turns on disk, %d reported committed before the kill", key, len(turns), committed[w]+1)
		if meta.Turns != len(turns) || meta.Messages != 4*len(turns) {
			t.Errorf("%s: meta says %d turns / %d messages, disk holds %d turns", key, meta.Turns, meta.Messages, len(turns))
		}
		hist, err := s.LoadHistory(ctx, key, 7)
		mustNo(t, err)
		if len(hist) != 4 || hist[0].Role != memory.RoleUser {
			t.Errorf("%s: LoadHistory(7) = %d messages starting with %q, want the last whole turn", key, len(hist), hist[0].Role)
		}
	}
	// The file stays writable after the crash.
	mustNo(t, s.AppendTurn(ctx, "crash:0", crashTurn(0, 1000)))
}

func reflectEqualTurn(got, want memory.Turn) bool {
	if got.ID != want.ID || got.Answer != want.Answer || len(got.Messages) != len(want.Messages) {
		return false
	}
	for i := range got.Messages {
		g, w := got.Messages[i], want.Messages[i]
		if g.Role != w.Role || g.Content != w.Content || g.ToolCallID != w.ToolCallID || len(g.ToolCalls) != len(w.ToolCalls) {
			return false
		}
		for j := range g.ToolCalls {
			if g.ToolCalls[j] != w.ToolCalls[j] {
				return false
			}
		}
	}
	return true
}

func TestOpenLockedByAnotherProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	path := filepath.Join(t.TempDir(), FileName)
	cmd := helperCommand(t, "hold", path)
	stdin, err := cmd.StdinPipe()
	mustNo(t, err)
	stdout, err := cmd.StdoutPipe()
	mustNo(t, err)
	mustNo(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "locked" {
	}

	_, err = Open(path, memory.Options{Timeout: 50 * time.Millisecond})
	if !errors.Is(err, memory.ErrInUse) || !strings.Contains(err.Error(), path+": database is in use by another switchboard process") {
		t.Fatalf("Open of a file held by another process: %v", err)
	}
	mustNo(t, stdin.Close()) // child closes the store and exits
	if err := cmd.Wait(); err != nil {
		t.Fatalf("holder exited with %v", err)
	}
	s := openAt(t, path, memory.Options{Timeout: time.Second})
	mustNo(t, s.Close())
}
