package doctor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The exec sandbox check: reported only when agent.tools enables exec; ok
// with a working bubblewrap, fail naming what to install without one, warn
// for exec.sandbox: none.
func TestExecSandboxCheck(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
			t.Skip("skipped: bubblewrap is not installed (apt-get install bubblewrap)")
		}
	}
	tests := []struct {
		name   string
		extra  string
		bwrap  string
		status Status // "" = no exec check at all
		want   []string
	}{
		{"exec not enabled", "", "", "", nil},
		{"bubblewrap works", "agent:\n  tools: [current_time, exec]\n", "", StatusOK, []string{"bubblewrap runs commands", "no network"}},
		{"bubblewrap missing", "agent:\n  tools: [exec]\n", "/nonexistent/bwrap", StatusFail, []string{"exec is refused", "apt-get install bubblewrap"}},
		{"sandbox none", "agent:\n  tools: [exec]\nexec:\n  sandbox: none\n", "/nonexistent/bwrap", StatusWarn, []string{"UNSANDBOXED", "exec.sandbox: bwrap"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "config.yaml")
			text := "bot:\n  data_dir: " + filepath.Join(dir, "data") + "\n" + tt.extra
			if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res := Check(ctx, Options{ConfigPath: cfg, Timeout: 2 * time.Second, Bwrap: tt.bwrap,
				LookupEnv: func(string) (string, bool) { return "", false }})
			var got *Result
			for i := range res {
				if res[i].Name == CheckExec {
					got = &res[i]
				}
			}
			if tt.status == "" {
				if got != nil {
					t.Fatalf("exec check reported though exec is not enabled: %+v", *got)
				}
				return
			}
			if got == nil {
				t.Fatalf("no %q check in %+v", CheckExec, res)
			}
			text = got.Finding + " | " + got.Fix
			if got.Status != tt.status {
				t.Errorf("status %s, want %s: %s", got.Status, tt.status, text)
			}
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("%q not in %s", w, text)
				}
			}
		})
	}
}
