package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// exec: parses with DESIGN §9's defaults, sizes with units, and bad values
// are refused naming the key.
func TestExecSection(t *testing.T) {
	c := mustParse(t, "exec: {sandbox: none, network: true, timeout: 2m, cpu: 10s, memory: 1GiB, max_processes: 8, "+
		"max_output: 16KiB, max_running: 2, approval: false, trusted_personas: [coder], temp_dir: /var/tmp}\n", emptyEnv)
	want := Exec{Sandbox: "none", Network: true, Timeout: 2 * time.Minute, CPU: 10 * time.Second, Memory: 1 << 30,
		MaxProcesses: 8, MaxOutput: 16 << 10, MaxRunning: 2, Approval: false, TrustedPersonas: []string{"coder"}, TempDir: "/var/tmp"}
	if !reflect.DeepEqual(c.Exec, want) {
		t.Fatalf("exec %+v, want %+v", c.Exec, want)
	}
	d := Default().Exec
	if d.Sandbox != "bwrap" || d.Network || d.Timeout != time.Minute || d.CPU != 30*time.Second || d.Memory != 512<<20 ||
		d.MaxProcesses != 64 || d.MaxOutput != 64<<10 || !d.Approval || d.MaxRunning != 4 {
		t.Fatalf("defaults %+v", d)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"exec: {sandbox: docker}\n", "exec.sandbox"},
		{"exec: {timeout: 0s}\n", "exec.timeout: 0s is too short"},
		{"exec: {cpu: 100ms}\n", "exec.cpu: 100ms is too short"},
		{"exec: {memory: 1KiB}\n", "exec.memory: must be at least 16MiB"},
		{"exec: {memory: lots}\n", "expected a size"},
		{"exec: {max_processes: 0}\n", "exec.max_processes: must be a positive integer"},
		{"exec: {max_output: 0}\n", "exec.max_output: must be between 1KiB and 16MiB"},
		{"exec: {max_running: 0}\n", "exec.max_running: must be a positive integer"},
		{"exec: {trusted_personas: [Bad Name]}\n", "exec.trusted_personas[0]"},
		{"exec: {temp_dir: tmp}\n", "exec.temp_dir: must be an absolute path"},
		{"exec: {shell: bash}\n", "shell"},
	} {
		if got := parseErr(t, tc.yaml, emptyEnv); !strings.Contains(got, tc.want) {
			t.Errorf("%q: error %q, want it to contain %q", tc.yaml, got, tc.want)
		}
	}
}
