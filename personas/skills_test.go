package personas

import (
	"reflect"
	"strings"
	"testing"
)

// Issue 16: a persona's skills allowlist: absent = every skill (nil),
// [] = none, names checked, errors with file:line; Format round-trips it.
func TestParseSkills(t *testing.T) {
	for _, tt := range []struct {
		name, front string
		want        []string
		err         string
	}{
		{"absent", "description: x\n", nil, ""},
		{"null", "skills:\n", nil, ""},
		{"empty", "skills: []\n", []string{}, ""},
		{"list", "skills: [greet, release-notes]\n", []string{"greet", "release-notes"}, ""},
		{"block", "description: x\nskills:\n  - greet\n  - Bad Name\n", nil, `p.md:5: skills: "Bad Name" is not a skill name (a-z, 0-9, _ and -, starting with a letter or digit)`},
		{"twice", "skills: [greet, greet]\n", nil, `p.md:2: skills: "greet" is listed twice`},
		{"scalar", "skills: greet\n", nil, "p.md:2: skills: expected a list of skill names such as [release-notes, code-review], got"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse("p.md", []byte("---\n"+tt.front+"---\nBody.\n"))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p.Skills, tt.want) || (p.Skills == nil) != (tt.want == nil) {
				t.Fatalf("Skills = %#v, want %#v", p.Skills, tt.want)
			}
			data, err := Format(p)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse("p.md", data)
			if err != nil || !reflect.DeepEqual(back, p) {
				t.Fatalf("round trip: %#v, %v\n%s", back, err, data)
			}
		})
	}
}
