package sandbox

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoBwrapRefusesExec: without bubblewrap, exec is refused with a message
// that says what to install, and the command never runs unsandboxed.
func TestNoBwrapRefusesExec(t *testing.T) {
	r, err := New(Options{Bwrap: filepath.Join(t.TempDir(), "bwrap")})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Check(context.Background())
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Errorf("Check = %v, want ErrUnavailable naming apt-get install bubblewrap", err)
	}
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Fix == "" {
		t.Errorf("Check error %T carries no fix", err)
	}
	ran := filepath.Join(t.TempDir(), "ran")
	res, err := r.Run(context.Background(), "touch "+ran, nil, Limits{})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "exec.sandbox: none") {
		t.Errorf("Run = %+v, %v; want ErrUnavailable", res, err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the command ran without a sandbox")
	}
}

// TestBrokenBwrapRefusesExec: a bwrap that cannot make a sandbox (here: one
// that fails like a kernel without user namespaces) is reported with its
// own message and the user-namespace fix.
func TestBrokenBwrapRefusesExec(t *testing.T) {
	// A directory the sandbox user (nobody, when the tests run as root)
	// can enter.
	dir, err := os.MkdirTemp("", "sandbox-fake-bwrap-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(dir, "bwrap")
	script := "#!/bin/sh\necho 'bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := New(Options{Bwrap: fake})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Check(context.Background())
	for _, want := range []string{"No permissions to create new namespace", "user namespaces", "seccomp=unconfined"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check = %v, want it to say %q", err, want)
		}
	}
}

// TestModeNone: the unsandboxed mode must be asked for by name, warns when
// constructed, and still has a clean environment and a timeout.
func TestModeNone(t *testing.T) {
	if _, err := New(Options{Mode: "off"}); err == nil || !strings.Contains(err.Error(), `"bwrap" or "none"`) {
		t.Errorf("New(mode off) = %v, want an error naming the modes", err)
	}
	var logs bytes.Buffer
	r, err := New(Options{Mode: ModeNone, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "UNSANDBOXED") {
		t.Errorf("no warning logged for mode none: %q", logs.String())
	}
	t.Setenv("SECRET_SENTINEL", "sentinel-value-4711")
	res, err := r.Run(context.Background(), "env; cat in.txt; echo out > out.txt",
		[]File{{Path: "in.txt", Data: []byte("in\n"), Mode: 0o644}}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Stdout, "SECRET_SENTINEL") || !strings.Contains(res.Stdout, "in\n") {
		t.Errorf("stdout %q: want the input file and no daemon variable", res.Stdout)
	}
	if got := fileMap(res.Changed); got["out.txt"] != "out\n" || len(got) != 1 {
		t.Errorf("changed = %q", got)
	}
	// A default runner is never unsandboxed.
	if r, _ := New(Options{}); r.Mode() != ModeBwrap {
		t.Errorf("default mode %q", r.Mode())
	}
}

// TestOutputCapped: a command that prints megabytes comes back as head and
// tail with the cut marked.
func TestOutputCapped(t *testing.T) {
	r := bwrapRunner(t, Options{MaxOutput: 1000})
	res, err := r.Run(context.Background(), "echo FIRST; yes middle | head -c 3000000; echo LAST; echo err >&2", nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OutputCut || !strings.HasPrefix(res.Stdout, "FIRST\n") || !strings.HasSuffix(res.Stdout, "LAST\n") {
		t.Errorf("stdout not head+tail (cut %v): %.80q … %q", res.OutputCut, res.Stdout, res.Stdout[max(0, len(res.Stdout)-40):])
	}
	// 6 + 3,000,000 + 5 bytes printed, 1,000 kept.
	if !strings.Contains(res.Stdout, "[… 2999011 bytes cut …]") {
		t.Errorf("no cut marker with the byte count: %q", res.Stdout)
	}
	if len(res.Stdout) > 1100 || res.Stderr != "err\n" {
		t.Errorf("stdout %d bytes, stderr %q", len(res.Stdout), res.Stderr)
	}
}
