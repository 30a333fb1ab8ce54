package sandbox

import (
	"context"
	"strings"
	"testing"
)

// A command that writes file after file, each under RLIMIT_FSIZE, used to
// fill the host's disk (or, on /dev/shm, its memory) until exec.timeout;
// one that makes empty files without end did the same to the inode table.
// Now it is stopped as soon as its directory holds more than the write-back
// could accept, the result names the bound and nothing is written back.
func TestRunStopsAWorkspaceFillingTheDisk(t *testing.T) {
	tests := []struct {
		name    string
		command string
		lim     Limits
		want    string
	}{
		{"bytes", `i=0; while head -c 1048576 /dev/zero > f$i; do i=$((i+1)); done`,
			Limits{MaxBytes: 2 << 20, MaxFiles: 1000, MaxFile: 2 << 20}, "workspace.max_bytes"},
		{"entries", `i=0; while : > e$i; do i=$((i+1)); done`,
			Limits{MaxBytes: 1 << 20, MaxFiles: 10, MaxFile: 1 << 20}, "workspace.max_files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mark := marker(t)
			r := bwrapRunner(t, Options{Timeout: 10 * 60e9, FileSize: 2 << 20})
			res, err := r.Run(context.Background(), tt.command+" # "+mark, []File{{Path: "keep", Data: []byte("k")}}, tt.lim)
			if err != nil {
				t.Fatal(err)
			}
			if res.TimedOut || !strings.Contains(res.Refused, tt.want) || !strings.Contains(res.Refused, "stopped") {
				t.Fatalf("timed out %v, refused %q: want the command stopped naming %s", res.TimedOut, res.Refused, tt.want)
			}
			if len(res.Changed) != 0 || len(res.Deleted) != 0 {
				t.Errorf("write-back despite the refusal: %d changed, %d deleted", len(res.Changed), len(res.Deleted))
			}
			assertNoSurvivors(t, mark)
		})
	}
}
