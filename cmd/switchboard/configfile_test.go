package main

// Issue B4, on the built binary: the config seed (SWITCHBOARD_CONFIG_SEED)
// and the config file are read as regular files only, without blocking and
// bounded (1 MiB): a device, a named pipe or a huge file is refused at once
// with the file named and exit 2, and nothing is written.

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestBinarySeedAndConfigMustBeRegularFiles(t *testing.T) {
	type paths struct{ dir, cfg, seed string }
	mkfifo := func(t *testing.T, p string) {
		t.Helper()
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, p paths) (env []string, args []string)
		want  []string // in stderr
	}{
		{
			name: "seed is /dev/zero",
			setup: func(t *testing.T, p paths) ([]string, []string) {
				return []string{"SWITCHBOARD_CONFIG=" + p.cfg, "SWITCHBOARD_CONFIG_SEED=/dev/zero"}, []string{"run"}
			},
			want: []string{"SWITCHBOARD_CONFIG_SEED", "/dev/zero", "not a regular file (a character device)"},
		},
		{
			name: "seed is a named pipe",
			setup: func(t *testing.T, p paths) ([]string, []string) {
				mkfifo(t, p.seed)
				return []string{"SWITCHBOARD_CONFIG=" + p.cfg, "SWITCHBOARD_CONFIG_SEED=" + p.seed}, []string{"run"}
			},
			want: []string{"SWITCHBOARD_CONFIG_SEED", p0seed, "not a regular file (a named pipe)"},
		},
		{
			name: "seed is over 1 MiB",
			setup: func(t *testing.T, p paths) ([]string, []string) {
				big := "bot:\n  name: x\n# " + strings.Repeat("a", 2<<20) + "\n"
				if err := os.WriteFile(p.seed, []byte(big), 0o644); err != nil {
					t.Fatal(err)
				}
				return []string{"SWITCHBOARD_CONFIG=" + p.cfg, "SWITCHBOARD_CONFIG_SEED=" + p.seed}, []string{"run"}
			},
			want: []string{"SWITCHBOARD_CONFIG_SEED", p0seed, "larger than 1024 KiB"},
		},
		{
			name: "config validate on a named pipe (SWITCHBOARD_CONFIG)",
			setup: func(t *testing.T, p paths) ([]string, []string) {
				mkfifo(t, p.cfg)
				return []string{"SWITCHBOARD_CONFIG=" + p.cfg}, []string{"config", "validate"}
			},
			want: []string{p0cfg, "not a regular file (a named pipe)"},
		},
		{
			name: "run on a named pipe (--config)",
			setup: func(t *testing.T, p paths) ([]string, []string) {
				mkfifo(t, p.cfg)
				return nil, []string{"--config", p.cfg, "run"}
			},
			want: []string{p0cfg, "not a regular file (a named pipe)"},
		},
		{
			name: "config validate on a named pipe found by lookup",
			setup: func(t *testing.T, p paths) ([]string, []string) {
				mkfifo(t, filepath.Join(p.dir, "config.yaml"))
				return nil, []string{"config", "validate"}
			},
			want: []string{"config.yaml", "not a regular file (a named pipe)"},
		},
		{
			name: "config set on a named pipe",
			setup: func(t *testing.T, p paths) ([]string, []string) {
				mkfifo(t, p.cfg)
				return []string{"SWITCHBOARD_CONFIG=" + p.cfg}, []string{"config", "set", "bot.name", "x"}
			},
			want: []string{p0cfg, "not a regular file (a named pipe)"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := paths{dir: dir, cfg: filepath.Join(dir, "data", "config.yaml"), seed: filepath.Join(dir, "seed.yaml")}
			if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
				t.Fatal(err)
			}
			env, args := tc.setup(t, p)
			r := runBinDir(t, dir, cleanEnv(append(env, "XDG_CONFIG_HOME="+filepath.Join(dir, "xdg"))...), args...)
			if r.code != exitUsage {
				t.Errorf("exit %d, want %d\nstderr: %s", r.code, exitUsage, r.stderr)
			}
			for _, w := range tc.want {
				w = strings.NewReplacer(p0cfg, p.cfg, p0seed, p.seed).Replace(w)
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, r.stderr)
				}
			}
			if fi, err := os.Lstat(p.cfg); err == nil && fi.Mode().IsRegular() {
				t.Errorf("a config file was written from a refused seed")
			}
		})
	}
}

// Placeholders in the wanted texts for the case's paths.
const (
	p0cfg  = "<cfg>"
	p0seed = "<seed>"
)

// runBinDir is runBin with the working directory dir.
func runBinDir(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitHang)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env, cmd.Dir = env, dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("run %v: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("switchboard %s hung (killed after %s)\nstderr: %s", strings.Join(args, " "), waitHang, r.stderr)
	}
	return r
}
