package pagetrim

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Release drops this process's read-only mappings of its own executable
// whose pages are all the file's, and returns how many bytes of address
// space it advised away.
func Release() (int64, error) {
	exe, err := os.Stat("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("pagetrim: %w", err)
	}
	st, ok := exe.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("pagetrim: no inode for /proc/self/exe")
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("pagetrim: %w", err)
	}
	ranges, err := fileBackedRanges(bytes.NewReader(smaps), st.Ino)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, r := range ranges {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, r.start, r.end-r.start, syscall.MADV_DONTNEED); errno != 0 {
			return total, fmt.Errorf("pagetrim: madvise %#x-%#x: %w", r.start, r.end, errno)
		}
		total += int64(r.end - r.start)
	}
	return total, nil
}

type addrRange struct{ start, end uintptr }

// fileBackedRanges returns the mappings in a /proc/<pid>/smaps listing that
// are backed by the file with inode ino, neither writable nor shared, and
// hold no anonymous page: the executable's text and read-only data, whose
// pages fault back in from the file unchanged. A read-only mapping with
// anonymous pages was written before it was made read-only (RELRO: a
// position-independent build's relocated type tables); dropping those pages
// would revert them to the file's unrelocated bytes, so it is kept.
//
//	00400000-00c4e000 r-xp 00000000 fd:01 1234   /usr/bin/switchboard
//	Size:               8504 kB
//	Anonymous:             0 kB
func fileBackedRanges(r io.Reader, ino uint64) ([]addrRange, error) {
	var (
		out  []addrRange
		cur  addrRange
		want bool // cur is a candidate, its Anonymous line not seen yet
	)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if !strings.HasSuffix(f[0], ":") { // a mapping's header line
			want = false
			rng, ok, err := candidate(f, ino)
			if err != nil {
				return nil, fmt.Errorf("pagetrim: bad smaps line %q: %w", line, err)
			}
			cur, want = rng, ok
			continue
		}
		if want && f[0] == "Anonymous:" {
			want = false
			if len(f) >= 2 && f[1] == "0" {
				out = append(out, cur)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("pagetrim: read smaps: %w", err)
	}
	return out, nil
}

// candidate parses a mapping's header fields and reports whether it is a
// private, non-writable mapping of the file with inode ino.
func candidate(f []string, ino uint64) (addrRange, bool, error) {
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok || len(f) < 5 {
		return addrRange{}, false, fmt.Errorf("no address range")
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return addrRange{}, false, fmt.Errorf("bad address range")
	}
	perms := f[1]
	if len(f) < 6 || len(perms) != 4 || perms[1] == 'w' || perms[3] != 'p' {
		return addrRange{}, false, nil // anonymous, writable or shared
	}
	if n, err := strconv.ParseUint(f[4], 10, 64); err != nil || n != ino {
		return addrRange{}, false, nil
	}
	return addrRange{uintptr(start), uintptr(end)}, true, nil
}
