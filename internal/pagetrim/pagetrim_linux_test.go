package pagetrim

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestFileBackedRanges(t *testing.T) {
	const smaps = `00400000-00c4e000 r-xp 00000000 fd:01 1234                               /usr/bin/switchboard
Size:               8504 kB
Rss:                2048 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
00c4e000-01400000 r--p 0084e000 fd:01 1234                               /usr/bin/switchboard
Size:               7880 kB
Anonymous:             0 kB
01400000-01450000 r--p 01000000 fd:01 1234                               /usr/bin/switchboard
Size:                320 kB
Anonymous:           120 kB
01450000-01490000 rw-p 01050000 fd:01 1234                               /usr/bin/switchboard
Anonymous:           256 kB
01490000-014d0000 rw-p 00000000 00:00 0
Anonymous:           256 kB
7f0000000000-7f0000100000 r--s 00000000 fd:01 5678                       /data/switchboard.db
Anonymous:             0 kB
7f0000200000-7f0000300000 r--p 00000000 fd:01 9999                       /usr/lib/other.so
Anonymous:             0 kB
7f0000300000-7f0000400000 r--p 00100000 fd:01 1234                       /usr/bin/switchboard
Size:               1024 kB
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]
Anonymous:           132 kB
`
	got, err := fileBackedRanges(strings.NewReader(smaps), 1234)
	if err != nil {
		t.Fatal(err)
	}
	// Kept: the RELRO mapping (anonymous pages), the writable data, the
	// shared database, another file, and a mapping whose Anonymous line
	// is missing (nothing proves its pages are the file's).
	want := []addrRange{{0x400000, 0xc4e000}, {0xc4e000, 0x1400000}}
	if !slices.Equal(got, want) {
		t.Fatalf("ranges = %#x, want the executable's text and read-only data %#x", got, want)
	}

	for _, bad := range []string{
		"zz-00c4e000 r-xp 00000000 fd:01 1234 /usr/bin/switchboard\n",
		"00c4e000-00400000 r-xp 00000000 fd:01 1234 /usr/bin/switchboard\n",
		"00400000 r-xp 00000000 fd:01 1234 /usr/bin/switchboard\n",
	} {
		if _, err := fileBackedRanges(strings.NewReader(bad), 1234); err == nil {
			t.Errorf("fileBackedRanges(%q) = nil error, want one", bad)
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

// A position-independent executable (-buildmode=pie, what some packagers
// build) has read-only pages the dynamic loader wrote (RELRO: its type and
// interface tables, relocated). Handing those back would revert them to the
// file's unrelocated bytes and crash the process at its next use of them;
// Release must leave them mapped.
func TestReleaseKeepsRelocatedPagesOfAPIE(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := filepath.Join(t.TempDir(), "relocated")
	build := exec.Command("go", "build", "-buildmode=pie", "-o", bin, "./testdata/relocated")
	if out, err := build.CombinedOutput(); err != nil {
		t.Skipf("cannot build a position-independent executable here: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "ok") {
		t.Fatalf("the PIE program after Release: %v\n%s", err, out)
	}
}
