package personas

import (
	"strings"
	"testing"
)

// The name rules bound the length apart from the pattern (issue 19: a
// counted repetition compiled to a large program kept at init); the bounds
// are still exactly what they were.
func TestNameLengthBounds(t *testing.T) {
	long := func(first string, n int) string { return first + strings.Repeat("a", n-len(first)) }
	tests := []struct {
		name  string
		valid func(string) bool
		in    string
		want  bool
	}{
		{"persona 1", ValidName, "a", true},
		{"persona 64", ValidName, long("a", 64), true},
		{"persona 65", ValidName, long("a", 65), false},
		{"persona empty", ValidName, "", false},
		{"persona upper", ValidName, "Ab", false},
		{"tool glob 64", validToolName, long("gh__*", 64), true},
		{"tool 65", validToolName, long("Ab", 65), false},
		{"tool space", validToolName, "a b", false},
		{"skill 64", validSkillName, long("9", 64), true},
		{"skill 65", validSkillName, long("9", 65), false},
		{"skill leading dash", validSkillName, "-a", false},
		{"skill empty", validSkillName, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.valid(tt.in); got != tt.want {
				t.Errorf("valid(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseRefusesOverlongToolName(t *testing.T) {
	tool := strings.Repeat("t", 65)
	_, err := Parse("p.md", []byte("---\ntools: ["+tool+"]\n---\nYou help.\n"))
	if err == nil || !strings.Contains(err.Error(), "is not a tool name") {
		t.Fatalf("Parse with a 65-character tool name: %v, want a tool name error", err)
	}
	if _, err := Parse("p.md", []byte("---\ntools: ["+tool[:64]+"]\n---\nYou help.\n")); err != nil {
		t.Fatalf("Parse with a 64-character tool name: %v", err)
	}
}
