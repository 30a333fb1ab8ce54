package config

import (
	"strings"
	"testing"
)

func TestMCPServerNameLength(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{strings.Repeat("s", 32), true},
		{strings.Repeat("s", 33), false},
		{"my-server-2", true},
		{"my_server", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("config.yaml", []byte("mcp:\n  servers:\n    "+tt.name+":\n      command: a\n"), envOf(nil))
			if tt.ok && err != nil {
				t.Fatal(err)
			}
			if !tt.ok && (err == nil || !strings.Contains(err.Error(), "must be 1-32 of a-z, 0-9 and -")) {
				t.Fatalf("err = %v, want the server name rule", err)
			}
		})
	}
}
