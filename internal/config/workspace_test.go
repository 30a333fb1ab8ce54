package config

import (
	"strings"
	"testing"
)

// workspace: sizes with units load; bad values are refused naming the key.
func TestWorkspaceSection(t *testing.T) {
	c := mustParse(t, "workspace: {max_bytes: 1.5GiB, max_files: 20, max_file: \"512 KiB\"}\n", envOf(nil))
	if w := c.Workspace; w.MaxBytes != 3<<29 || w.MaxFiles != 20 || w.MaxFile != 512<<10 {
		t.Errorf("workspace = %+v", w)
	}
	if d := mustParse(t, "bot: {name: x}\n", envOf(nil)).Workspace; d != DefaultWorkspace() || d.MaxBytes.String() != "50MiB" {
		t.Errorf("default workspace = %+v", d)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"workspace: {max_bytes: 50 parsecs}\n", `workspace.max_bytes: expected a size such as 50MiB, 512KiB or 4096 (bytes), got "50 parsecs"`},
		{"workspace: {max_bytes: -1}\n", "workspace.max_bytes: expected a size"},
		{"workspace: {max_files: 0}\n", "workspace.max_files: must be at least 1"},
		{"workspace: {max_file: 0}\n", "workspace.max_file: must be a size of at least 1 byte"},
		{"workspace: {max_bytes: 1MiB, max_file: 2MiB}\n", "workspace.max_file: must not be larger than workspace.max_bytes (1MiB), got 2MiB"},
		{"workspace: {max_byte: 1}\n", "max_byte"},
	} {
		if got := parseErr(t, tc.yaml, envOf(nil)); !strings.Contains(got, tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, got, tc.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]Size{"4096": 4096, "10B": 10, "1KiB": 1024, "1 KB": 1000, "50MiB": 50 << 20,
		"2mb": 2e6, "1.5GiB": 3 << 29, "1G": 1 << 30} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "MiB", "1 TiB", "1e3", "-5", "1.2.3KiB"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}
