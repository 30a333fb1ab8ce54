package sandbox

import (
	"strings"
	"testing"
)

func TestCapBuffer(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
		cut    bool
	}{
		{"fits", 10, []string{"abc", "def"}, "abcdef", false},
		{"exactly full", 6, []string{"abcdef"}, "abcdef", false},
		{"one big write", 6, []string{"abcdefghij"}, "abc\n[… 4 bytes cut …]\nhij", true},
		{"many small writes", 6, []string{"ab", "cd", "ef", "gh", "ij", "k"}, "abc\n[… 5 bytes cut …]\nijk", true},
		{"tail wraps", 4, []string{"12", "345", "6", "789"}, "12\n[… 5 bytes cut …]\n89", true},
		{"rune not split", 4, []string{"aé", "xyz", "é"}, "a\n[… 5 bytes cut …]\né", true},
		{"binary replaced", 10, []string{"a\xffb"}, "a\uFFFDb", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newCapBuffer(tc.max)
			for _, w := range tc.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := b.String(); got != tc.want || b.cut() != tc.cut {
				t.Errorf("got %q (cut %v), want %q (cut %v)", got, b.cut(), tc.want, tc.cut)
			}
		})
	}
	if got := strings.Count(newCapBuffer(0).String(), "x"); got != 0 {
		t.Error("empty buffer not empty")
	}
}
