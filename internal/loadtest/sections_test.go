//go:build linux

package loadtest

import (
	"os"
	"testing"
)

// The test binary's own sections: the code running now is resident, and
// no section counts more than its size (plus the two pages it may share
// with its neighbours).
func TestExeSectionsOfThisProcess(t *testing.T) {
	secs, err := ExeSections(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Section{}
	for _, s := range secs {
		byName[s.Name] = s
		if s.ResidentKiB > s.SizeKiB+8 {
			t.Errorf("%s: %d KiB resident of %d", s.Name, s.ResidentKiB, s.SizeKiB)
		}
	}
	for _, name := range []string{".text", ".rodata", ".gopclntab"} {
		if byName[name].ResidentKiB == 0 {
			t.Errorf("%s: nothing resident in a running process (%+v)", name, secs)
		}
	}
}
