package agent

import (
	"strings"
	"testing"
)

// The fast paths of oneLine, clip and neutralize give what the slow paths
// give, for any text.
func FuzzTextFastPaths(f *testing.F) {
	for _, s := range []string{"", "one line", " lead", "trail ", "two  spaces", "tab\there", "nl\n", "\u00a0nbsp", "é", "<tool-output>", "a <b", "\x7f\x01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := oneLine(s), strings.Join(strings.Fields(s), " "); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", s, got, want)
		}
		for _, n := range []int{0, 1, 5, 40} {
			want := s
			if r := []rune(s); len(r) > n {
				want = string(r[:n]) + "…"
			}
			if got := clip(s, n); got != want {
				t.Errorf("clip(%q, %d) = %q, want %q", s, n, got, want)
			}
		}
		want := markerRE("tool-output").ReplaceAllString(s, "<${1}tool_output")
		if got := neutralize(s, "tool-output"); got != want {
			t.Errorf("neutralize(%q) = %q, want %q", s, got, want)
		}
	})
}
