package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 28 item 2: `run` writes the config named by SWITCHBOARD_CONFIG from
// SWITCHBOARD_CONFIG_SEED when it does not exist, and never otherwise.
// TestImageLayoutWithoutDocker runs it in the image's layout as uid 65532;
// these are the edges.
func TestSeedConfig(t *testing.T) {
	const seedText = "bot:\n  name: Seeded\n"
	for _, tt := range []struct {
		name     string
		existing string // the config file's content before; "" = none
		seed     bool   // SWITCHBOARD_CONFIG_SEED set
		seedFile bool   // ... to a file that exists
		noDir    bool   // the config's directory does not exist
		wrote    bool
		code     int // exit code of the error; 0 = none
		errText  string
	}{
		{name: "first start", seed: true, seedFile: true, wrote: true},
		{name: "never over an existing file", existing: "bot:\n  name: Mine\n", seed: true, seedFile: true},
		{name: "outside the image (no seed)", seed: false},
		{name: "seed missing", seed: true, code: exitUsage, errText: "SWITCHBOARD_CONFIG_SEED names the default config"},
		{name: "volume not writable", seed: true, seedFile: true, noDir: true, code: exitFailure,
			errText: "first start: could not write the default config"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfgPath := filepath.Join(dir, "data", "config.yaml")
			if !tt.noDir {
				if err := os.Mkdir(filepath.Dir(cfgPath), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if tt.existing != "" {
				if err := os.WriteFile(cfgPath, []byte(tt.existing), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			seedPath := filepath.Join(dir, "usr", "share", "config.yaml")
			if tt.seedFile {
				if err := os.MkdirAll(filepath.Dir(seedPath), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(seedPath, []byte(seedText), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			env := map[string]string{envConfig: cfgPath}
			if tt.seed {
				env[envConfigSeed] = seedPath
			}
			a := &app{env: func(k string) string { return env[k] }}
			got, err := a.seedConfig()
			if tt.code != 0 {
				code, msg := exitCode(nil, err)
				if err == nil || code != tt.code || !strings.Contains(msg, tt.errText) {
					t.Fatalf("err %v (exit %d), want exit %d with %q", err, code, tt.code, tt.errText)
				}
				if _, serr := os.Stat(cfgPath); tt.existing == "" && serr == nil {
					t.Fatal("a config file was written although seeding failed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got != nil) != tt.wrote {
				t.Fatalf("seedConfig wrote %v, want %v", got, tt.wrote)
			}
			data, rerr := os.ReadFile(cfgPath)
			switch {
			case tt.wrote:
				info, _ := os.Stat(cfgPath)
				if string(data) != seedText || info.Mode().Perm() != 0o600 || got.file != cfgPath || got.from != seedPath {
					t.Fatalf("wrote %q mode %v (%+v), want the seed, 0600", data, info.Mode().Perm(), got)
				}
				// A second start finds it and writes nothing, even when the
				// image's default changed meanwhile.
				if err := os.WriteFile(seedPath, []byte("bot:\n  name: Newer\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if again, err := a.seedConfig(); err != nil || again != nil {
					t.Fatalf("second start: %+v %v", again, err)
				}
				if data2, _ := os.ReadFile(cfgPath); string(data2) != seedText {
					t.Fatalf("the second start changed the config: %q", data2)
				}
			case tt.existing != "":
				if string(data) != tt.existing {
					t.Fatalf("the existing config was changed: %q", data)
				}
			default:
				if rerr == nil {
					t.Fatalf("a config was written without a seed: %q", data)
				}
			}
			if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(cfgPath), ".config.yaml.tmp-*")); len(leftovers) > 0 {
				t.Fatalf("temporary files left: %v", leftovers)
			}
		})
	}
}
