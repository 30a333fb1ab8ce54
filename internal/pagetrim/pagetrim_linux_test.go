package pagetrim

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestReadOnlyRanges(t *testing.T) {
	const maps = `00400000-00c4e000 r-xp 00000000 fd:01 1234                               /usr/bin/switchboard
00c4e000-01400000 r--p 0084e000 fd:01 1234                               /usr/bin/switchboard
01400000-01450000 rw-p 01000000 fd:01 1234                               /usr/bin/switchboard
01450000-01490000 rw-p 00000000 00:00 0
7f0000000000-7f0000100000 r--s 00000000 fd:01 5678                       /data/switchboard.db
7f0000200000-7f0000300000 r--p 00000000 fd:01 9999                       /usr/lib/other.so
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]
`
	got, err := readOnlyRanges(strings.NewReader(maps), 1234)
	if err != nil {
		t.Fatal(err)
	}
	want := []addrRange{{0x400000, 0xc4e000}, {0xc4e000, 0x1400000}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("ranges = %#v, want the executable's text and read-only data %#v", got, want)
	}

	for _, bad := range []string{
		"zz-00c4e000 r-xp 00000000 fd:01 1234 /usr/bin/switchboard\n",
		"00c4e000-00400000 r-xp 00000000 fd:01 1234 /usr/bin/switchboard\n",
		"00400000 r-xp 00000000 fd:01 1234 /usr/bin/switchboard\n",
	} {
		if _, err := readOnlyRanges(strings.NewReader(bad), 1234); err == nil {
			t.Errorf("readOnlyRanges(%q) = nil error, want one", bad)
		}
	}
}

// rssFileKiB reads this process's file-backed resident set.
func rssFileKiB(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// Release hands back the executable's pages the process touched, and the
// process goes on running (the pages fault back in from the page cache).
func TestReleaseShrinksTheResidentExecutable(t *testing.T) {
	before := rssFileKiB(t)
	n, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	after := rssFileKiB(t)
	if n <= 0 {
		t.Fatalf("Release advised %d bytes away, want the executable's read-only mappings", n)
	}
	if after >= before {
		t.Fatalf("RssFile %d KiB before Release, %d KiB after: nothing was handed back", before, after)
	}
	t.Logf("RssFile %d KiB -> %d KiB (%d KiB of mappings advised)", before, after, n>>10)
}
