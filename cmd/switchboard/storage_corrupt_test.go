package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/pgtest"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
	"github.com/switchboard-bot/switchboard/memory/postgres"
)

// writeSessions fills a new bolt file at path with 150 sessions of one
// 900-byte message each, through the store the daemon uses: a file of
// many pages, as an installation's.
func writeSessions(t *testing.T, path string) {
	t.Helper()
	st, err := bolt.Open(path, memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 150 {
		key := fmt.Sprintf("telegram:%d", i)
		turn := memory.Turn{ID: key, Messages: []memory.Message{{Role: memory.RoleUser, Content: strings.Repeat("hello ", 150)}}}
		if err := st.AppendTurn(context.Background(), key, turn); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// boltHighWater is the number of bytes of path its newest header says are
// in use (pages × page size): damage below it is damage to data.
func boltHighWater(t *testing.T, path string) int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	ps := int64(le.Uint32(data[16+8:]))
	var best, txid uint64
	for m := int64(0); m < 2; m++ {
		meta := data[m*ps+16:]
		if id := le.Uint64(meta[48:]); id >= txid {
			best, txid = le.Uint64(meta[40:]), id
		}
	}
	return int64(best) * ps
}

// truncateTo returns damage that cuts the file to size(highWater) bytes.
func truncateTo(size func(highWater, pageSize int64) int64) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		t.Helper()
		if err := os.Truncate(path, size(boltHighWater(t, path), int64(os.Getpagesize()))); err != nil {
			t.Fatal(err)
		}
	}
}

// garbageOverLeaves writes random bytes over the leaf pages, leaving the
// header and the freelist alone: bolt opens the file and only fails (or
// faults) once it reads the data.
func garbageOverLeaves(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps := os.Getpagesize()
	keep := map[int]bool{0: true, 1: true}
	for m := 0; m < 2; m++ {
		keep[int(binary.LittleEndian.Uint64(data[m*ps+16+32:]))] = true // meta.freelist
	}
	rnd := rand.New(rand.NewSource(7))
	for p := 2; (p+1)*ps <= len(data); p++ {
		if !keep[p] && binary.LittleEndian.Uint16(data[p*ps+8:]) == 0x02 { // leaf pages
			rnd.Read(data[p*ps+16 : (p+1)*ps])
		}
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Issue 27 break 4: `storage migrate` read the bolt file without the check
// `run` makes, so a damaged file crashed it with "fatal error: fault" or a
// bolt assertion and a goroutine trace (exit 2). It must refuse the file as
// `run` does: exit 1, one line naming the file and the damage, the fix line,
// and the target left as it was (nothing emptied, nothing half-copied).
func TestBinaryStorageMigrateCorruptSource(t *testing.T) {
	bins, err := pgtest.FindBinaries()
	if err != nil {
		t.Skipf("PostgreSQL binaries not found (apt-get install postgresql): %v", err)
	}
	cluster, err := pgtest.NewCluster(bins, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	good := fillBolt(t) // what the target holds before each refused copy

	damage := []struct {
		name string
		fn   func(t *testing.T, path string)
		want string // the damage the error names
	}{
		{"truncated to half", truncateTo(func(hw, _ int64) int64 { return hw / 2 }), "file is truncated"},
		{"truncated to a quarter", truncateTo(func(hw, _ int64) int64 { return hw / 4 }), "file is truncated"},
		{"truncated to three quarters", truncateTo(func(hw, _ int64) int64 { return hw * 3 / 4 }), "file is truncated"},
		{"truncated inside a page", truncateTo(func(hw, ps int64) int64 { return hw/2 + ps/3 }), "file is truncated"},
		{"last page cut off", truncateTo(func(hw, ps int64) int64 { return hw - ps }), "file is truncated"},
		{"only the headers left", truncateTo(func(_, ps int64) int64 { return 2 * ps }), "file is truncated"},
		{"cut inside the first header", truncateTo(func(_, _ int64) int64 { return 40 }), ""},
		{"emptied", truncateTo(func(_, _ int64) int64 { return 0 }), "empty"},
		{"garbage written over the data pages", garbageOverLeaves, ""},
	}
	ctx := context.Background()
	for _, d := range damage {
		t.Run(d.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "data", bolt.FileName)
			writeSessions(t, path)
			d.fn(t, path)

			url, err := cluster.CreateDatabase(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			if code, out, errOut := runCLI(t, "storage", "migrate", "--from", "bolt:"+good.path, "--to", "postgres:"+url); code != 0 {
				t.Fatalf("filling the target: exit %d\n%s%s", code, out, errOut)
			}
			before := targetCounts(t, url)

			r := runBin(t, cleanEnv(), "storage", "migrate", "--force", "--from", "bolt:"+path, "--to", "postgres:"+url)
			out := r.stdout + r.stderr
			t.Log(r.stderr)
			if r.code != 1 {
				t.Fatalf("migrate from a damaged file: exit %d, want 1\n%s", r.code, out)
			}
			for _, bad := range []string{"goroutine ", "fatal error", "panic:", "SIGSEGV", "SIGBUS", "unexpected fault"} {
				if strings.Contains(out, bad) {
					t.Errorf("migrate printed a crash (%q):\n%s", bad, out)
				}
			}
			var errLines []string
			for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
				if !strings.HasPrefix(l, "reading ") {
					errLines = append(errLines, l)
				}
			}
			if len(errLines) != 2 || !strings.HasPrefix(errLines[0], "switchboard: ") || !strings.HasPrefix(errLines[1], "fix: ") {
				t.Fatalf("want one error line and the fix line, got:\n%s", r.stderr)
			}
			for _, want := range []string{path, "not a valid switchboard database", d.want} {
				if !strings.Contains(errLines[0], want) {
					t.Errorf("the error lacks %q: %s", want, errLines[0])
				}
			}
			if want := "mv " + path + " " + path + ".corrupt-"; !strings.Contains(errLines[1], want) {
				t.Errorf("the fix lacks %q: %s", want, errLines[1])
			}
			if r.stdout != "" {
				t.Errorf("stdout: %q, want nothing (no count table for a copy not made)", r.stdout)
			}
			if after := targetCounts(t, url); after != before {
				t.Errorf("the target changed although nothing was copied:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// targetCounts are the counts migrate compares, of the database at url.
func targetCounts(t *testing.T, url string) counts {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, url, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := countStore(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if c == (counts{}) {
		t.Fatal("the target holds nothing: the test cannot tell whether it was emptied")
	}
	return c
}

// Issue 27 break 4: every command that opens the bolt file itself (the
// daemon not running) makes the check `run` makes: a damaged file is exit 1
// with the error and the fix, never a crash.
func TestBinaryOfflineCommandsRefuseCorruptDatabase(t *testing.T) {
	commands := [][]string{
		{"sessions", "list"}, {"sessions", "show", "telegram:1"}, {"sessions", "export", "telegram:1"},
		{"sessions", "reset", "telegram:1"}, {"pairing", "list"}, {"jobs", "list"}, {"audit"},
		{"prompt", "--target", "telegram:1"},
	}
	damage := []struct {
		name string
		fn   func(t *testing.T, path string)
	}{
		{"truncated to half", truncateTo(func(hw, _ int64) int64 { return hw / 2 })},
		{"garbage written over the data pages", garbageOverLeaves},
	}
	for _, d := range damage {
		t.Run(d.name, func(t *testing.T) {
			cfg := writeConfig(t, "bot:\n  data_dir: ./data\nserver:\n  listen: 127.0.0.1:0\n")
			path := filepath.Join(filepath.Dir(cfg), "data", bolt.FileName)
			writeSessions(t, path)
			d.fn(t, path)
			for _, args := range commands {
				r := runBin(t, cleanEnv(), append([]string{"--config", cfg}, args...)...)
				out := r.stdout + r.stderr
				if r.code != 1 || !strings.Contains(r.stderr, "not a valid switchboard database") ||
					!strings.Contains(r.stderr, "\nfix: stop switchboard") {
					t.Errorf("%v: exit %d, want 1 with the damage and the fix:\n%s", args, r.code, out)
				}
				for _, bad := range []string{"goroutine ", "fatal error", "panic:", "unexpected fault"} {
					if strings.Contains(out, bad) {
						t.Errorf("%v printed a crash (%q):\n%s", args, bad, out)
					}
				}
			}
		})
	}
}
