package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/agent/tools"
	"github.com/switchboard-bot/switchboard/internal/sandbox"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// Figures for the lead (issue 31 part 2):
//
//	go test -run '^$' -bench 'BenchmarkExec' -benchtime 200x ./agent/tools/
//
// p50/p99 of one exec call through the tool (snapshot, sandbox, write-back,
// staging), on /dev/shm and on the system's temporary directory.

func benchExec(b *testing.B, tempDir, command string, seed int) {
	runner, err := sandbox.New(sandbox.Options{TempDir: tempDir})
	if err != nil {
		b.Fatal(err)
	}
	if err := runner.Check(context.Background()); err != nil {
		b.Skipf("no working bubblewrap: %v", err)
	}
	st, err := bolt.Open(filepath.Join(b.TempDir(), "db"), memory.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if seed > 0 {
		var c memory.WorkspaceChange
		for i := range seed {
			c.Writes = append(c.Writes, memory.FileWrite{Path: fmt.Sprintf("d/f%d", i), Content: []byte(strings.Repeat("x", 100))})
		}
		if err := st.ApplyFiles(context.Background(), "c", c, memory.WorkspaceLimits{}); err != nil {
			b.Fatal(err)
		}
	}
	tool := tools.NewExec(tools.ExecOptions{Runner: runner})
	raw, _ := json.Marshal(map[string]string{"command": command})
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		files := agent.NewTurnFiles(st, "c", memory.WorkspaceLimits{}, nil)
		ctx := agent.WithCallInfo(context.Background(), agent.CallInfo{SessionKey: "c", Files: files})
		start := time.Now()
		out, err := tool.Call(ctx, raw)
		durs = append(durs, time.Since(start))
		if err != nil || !strings.Contains(out, "exit code 0") {
			b.Fatalf("%v %s", err, out)
		}
	}
	b.StopTimer()
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(durs[len(durs)*99/100].Microseconds())/1000, "p99-ms")
}

func tempDirs() map[string]string {
	m := map[string]string{"tmp": os.TempDir()}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		m["shm"] = "/dev/shm"
	}
	return m
}

// BenchmarkExecTrue: sandbox start-up, `true` over an empty workspace.
func BenchmarkExecTrue(b *testing.B) {
	for name, dir := range tempDirs() {
		b.Run(name, func(b *testing.B) { benchExec(b, dir, "true", 0) })
	}
}

// BenchmarkExecWriteBack1000: the command writes 1,000 new small files,
// which come back and are staged.
func BenchmarkExecWriteBack1000(b *testing.B) {
	for name, dir := range tempDirs() {
		b.Run(name, func(b *testing.B) {
			benchExec(b, dir, `i=0; while [ $i -lt 1000 ]; do echo $i > f$i; i=$((i+1)); done`, 0)
		})
	}
}

// BenchmarkExecOver1000: `true` over a workspace of 1,000 stored files of
// 100 bytes (materialized and compared back each call).
func BenchmarkExecOver1000(b *testing.B) {
	for name, dir := range tempDirs() {
		b.Run(name, func(b *testing.B) { benchExec(b, dir, "true", 1000) })
	}
}

// TestWorkspaceStorageOverhead logs the bolt file's growth for one chat's
// workspace of 1,000 files of 100 bytes (run with -v; a figure, no bound).
func TestWorkspaceStorageOverhead(t *testing.T) {
	if testing.Short() {
		t.Skip("a figure for the lead")
	}
	path := filepath.Join(t.TempDir(), "db")
	st, err := bolt.Open(path, memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	var c memory.WorkspaceChange
	for i := range 1000 {
		c.Writes = append(c.Writes, memory.FileWrite{Path: fmt.Sprintf("d/f%d", i), Content: []byte(strings.Repeat("x", 100))})
	}
	if err := st.ApplyFiles(context.Background(), "telegram:1", c, memory.WorkspaceLimits{}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("1,000 files of 100 bytes (100,000 bytes of content): the bolt file grew by %d bytes (%d before)", size()-before, before)
}
