package agent

import (
	"strings"
	"testing"
)

// Tool names are at most 64 characters; the patterns no longer
// count, so the length check is what refuses a 65th.
func TestNameLengthLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"bad name", false},
	} {
		err := NewRegistry().Register(&funcTool{name: tc.name})
		if (err == nil) != tc.ok {
			t.Errorf("Register(tool %d chars %q…) = %v, want ok %v", len(tc.name), tc.name[:min(len(tc.name), 8)], err, tc.ok)
		}
	}
}
