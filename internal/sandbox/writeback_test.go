package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestWriteBack runs commands over a snapshot and checks what comes back:
// changed regular files only, deletions, nothing when a bound is broken.
func TestWriteBack(t *testing.T) {
	r := bwrapRunner(t, Options{})
	snapshot := []File{
		{Path: "keep.txt", Data: []byte("same"), Mode: 0o644},
		{Path: "edit.txt", Data: []byte("old"), Mode: 0o644},
		{Path: "gone.txt", Data: []byte("bye"), Mode: 0o644},
		{Path: "dir/script.sh", Data: []byte("echo hi"), Mode: 0o644},
	}
	lim := Limits{MaxBytes: 1 << 20, MaxFiles: 20, MaxFile: 256 << 10}
	tests := []struct {
		name    string
		cmd     string
		changed map[string]string
		modes   map[string]os.FileMode
		deleted []string
		ignored []string
		refused string // substring of Refused; "" = not refused
	}{
		{
			name:    "edit create delete",
			cmd:     "echo new > edit.txt; mkdir -p a/b; printf x > a/b/made.txt; rm gone.txt",
			changed: map[string]string{"edit.txt": "new\n", "a/b/made.txt": "x"},
			deleted: []string{"gone.txt"},
		},
		{
			name:    "mode change",
			cmd:     "chmod +x dir/script.sh",
			changed: map[string]string{"dir/script.sh": "echo hi"},
			modes:   map[string]os.FileMode{"dir/script.sh": 0o755},
		},
		{
			name:    "symlink to host file",
			cmd:     "ln -s /etc/passwd passwd; ln -sf /etc/passwd edit.txt; mkfifo pipe",
			deleted: []string{"edit.txt"},
			ignored: []string{"edit.txt", "passwd", "pipe"},
		},
		{
			name:    "zip bomb one file",
			cmd:     "yes | head -c 5000000 > bomb.txt",
			refused: "workspace.max_file",
		},
		{
			name:    "zip bomb total",
			cmd:     `python3 -c 'for i in range(8): open("part%d" % i, "w").write("y" * 200000)'; echo new > edit.txt`,
			refused: "workspace.max_bytes",
		},
		{
			name:    "too many files",
			cmd:     "for i in $(seq 1 50); do : > f$i; done",
			refused: "workspace.max_files",
		},
		{
			name:    "empty directory bomb",
			cmd:     `python3 -c 'import os; [os.mkdir("d%d" % i) for i in range(1200)]'`,
			refused: "workspace.max_files",
		},
		{
			name: "unreadable files", cmd: "echo s > secret; chmod 000 secret; mkdir locked; echo t > locked/f; chmod 000 locked",
			changed: map[string]string{"secret": "s\n", "locked/f": "t\n"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := r.Run(context.Background(), tc.cmd, snapshot, lim)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if tc.refused != "" {
				if !strings.Contains(res.Refused, tc.refused) {
					t.Errorf("Refused = %q, want it to name %s", res.Refused, tc.refused)
				}
				if len(res.Changed) != 0 || len(res.Deleted) != 0 {
					t.Errorf("refused, yet write-back holds changed %v deleted %v", keys(fileMap(res.Changed)), res.Deleted)
				}
				return
			}
			if res.Refused != "" {
				t.Fatalf("refused: %s (stderr %q)", res.Refused, res.Stderr)
			}
			if got := fileMap(res.Changed); !reflect.DeepEqual(got, orEmpty(tc.changed)) {
				t.Errorf("changed = %q, want %q", got, tc.changed)
			}
			for _, f := range res.Changed {
				want := tc.modes[f.Path]
				if want == 0 {
					want = 0o644
				}
				if f.Mode != want {
					t.Errorf("%s mode %v, want %v", f.Path, f.Mode, want)
				}
			}
			if !reflect.DeepEqual(res.Deleted, tc.deleted) {
				t.Errorf("deleted = %q, want %q", res.Deleted, tc.deleted)
			}
			if !reflect.DeepEqual(res.Ignored, tc.ignored) {
				t.Errorf("ignored = %q, want %q", res.Ignored, tc.ignored)
			}
		})
	}
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// TestRunRefusesBadSnapshots: a snapshot with a path that leaves the
// workspace, or a non-regular file, is an error before anything runs.
func TestRunRefusesBadSnapshots(t *testing.T) {
	r, err := New(Options{Mode: ModeNone})
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "ran")
	tests := []struct {
		name  string
		files []File
		want  string
	}{
		{"dotdot", []File{{Path: "../x", Mode: 0o644}}, "leaves the workspace"},
		{"dotdot inside", []File{{Path: "a/../../x", Mode: 0o644}}, "not clean"},
		{"absolute", []File{{Path: "/etc/passwd", Mode: 0o644}}, "must be relative"},
		{"empty", []File{{Path: "", Mode: 0o644}}, "empty path"},
		{"dot", []File{{Path: ".", Mode: 0o644}}, "not clean"},
		{"trailing slash", []File{{Path: "a/", Mode: 0o644}}, "not clean"},
		{"control char", []File{{Path: "a\nb", Mode: 0o644}}, "control character"},
		{"symlink", []File{{Path: "l", Mode: os.ModeSymlink | 0o777}}, "not a regular file"},
		{"twice", []File{{Path: "a", Mode: 0o644}, {Path: "a", Mode: 0o644}}, "listed twice"},
		{"file as dir", []File{{Path: "a", Mode: 0o644}, {Path: "a/b", Mode: 0o644}}, "is a file, not a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.Run(context.Background(), "touch "+outside, tc.files, Limits{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
			if _, err := os.Stat(outside); err == nil {
				t.Error("the command ran despite a bad snapshot")
			}
		})
	}
}

// TestCollectStatsBeforeReading: a 10 GB (sparse) file is refused by its
// size without being read.
func TestCollectStatsBeforeReading(t *testing.T) {
	dir := t.TempDir()
	fh, err := os.Create(filepath.Join(dir, "huge"))
	if err != nil {
		t.Fatal(err)
	}
	if err := fh.Truncate(10 << 30); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	wb, err := collect(dir, nil, Limits{MaxFile: 10 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(wb.Refused, "workspace.max_file: huge is 10737418240 bytes") || len(wb.Changed) != 0 {
		t.Errorf("write-back = %+v, want refused by workspace.max_file", wb)
	}
}

// TestWriteBackFileAtTheSizeLimit: with RLIMIT_FSIZE equal to
// workspace.max_file (what the daemon configures), a command writing more
// than max_file used to leave a file cut at exactly max_file bytes, which
// passed the bound and was saved, silently truncated. Such a file must be
// refused by name, nothing written back.
func TestWriteBackFileAtTheSizeLimit(t *testing.T) {
	const maxFile = 64 << 10
	r := bwrapRunner(t, Options{FileSize: maxFile})
	tests := []struct{ name, cmd string }{
		{"head past the limit", "head -c 200000 /dev/zero > big; echo rc=$?"},
		{"python past the limit", `python3 -c 'open("big", "wb").write(b"x" * 200000)'; echo rc=$?`},
		{"exactly the limit is kept", "head -c 65536 /dev/zero > big"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := r.Run(context.Background(), tc.cmd, nil, Limits{MaxBytes: 1 << 20, MaxFiles: 10, MaxFile: maxFile})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if strings.HasPrefix(tc.name, "exactly") {
				if res.Refused != "" || len(res.Changed) != 1 || len(res.Changed[0].Data) != maxFile {
					t.Fatalf("a file of exactly max_file: refused %q, changed %d", res.Refused, len(res.Changed))
				}
				return
			}
			if !strings.Contains(res.Refused, "workspace.max_file: big is") || len(res.Changed) != 0 {
				var sizes []int
				for _, f := range res.Changed {
					sizes = append(sizes, len(f.Data))
				}
				t.Errorf("refused %q, written back %v (sizes %v): want refused by workspace.max_file naming big, nothing written back",
					res.Refused, keys(fileMap(res.Changed)), sizes)
			}
		})
	}
}
