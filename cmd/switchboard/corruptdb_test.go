package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// Issue 13 defect 4: a half-truncated or garbage-written switchboard.db used
// to pass start-up (/readyz 200) and then crash the daemon with a bolt panic
// on the first message, on every restart. `run` must refuse to start with
// doctor's message and fix, exit 1, and print no panic trace; `doctor` must
// say the same.
func TestBinaryRunRefusesDamagedDatabase(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	damage := []struct {
		name string
		fn   func(t *testing.T, path string)
	}{
		{"truncated to half", func(t *testing.T, path string) {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"garbage written over the data pages", garbageOverLeaves},
	}
	for _, d := range damage {
		t.Run(d.name, func(t *testing.T) {
			cfg := writeConfig(t, fmt.Sprintf(`bot:
  data_dir: ./data
llm:
  base_url: %s
  api_key: sk-test
server:
  listen: 127.0.0.1:0
`, llm.URL))
			dbPath := filepath.Join(filepath.Dir(cfg), "data", bolt.FileName)
			writeSessions(t, dbPath)
			d.fn(t, dbPath)

			r := runBin(t, cleanEnv(), "--config", cfg, "run")
			out := r.stdout + r.stderr
			if r.code != 1 {
				t.Fatalf("run on a damaged database: exit %d, want 1\n%s", r.code, out)
			}
			for _, want := range []string{dbPath, "not a valid switchboard database", "fix: stop switchboard, then move the file aside", "mv " + dbPath + " " + dbPath + ".corrupt-"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("run's error lacks %q:\n%s", want, out)
				}
			}
			for _, bad := range []string{"goroutine ", "panic:", "SIGSEGV", "unexpected fault"} {
				if strings.Contains(out, bad) {
					t.Errorf("run printed a crash (%q):\n%s", bad, out)
				}
			}
			doc := runBin(t, cleanEnv(), "--config", cfg, "doctor")
			if !strings.Contains(doc.stdout, "is damaged or not a switchboard database") || !strings.Contains(doc.stdout, "mv "+dbPath+" "+dbPath+".corrupt-") {
				t.Errorf("doctor does not give the same fix:\n%s", doc.stdout)
			}
		})
	}
}
