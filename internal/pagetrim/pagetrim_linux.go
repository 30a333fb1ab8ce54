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

// Release drops this process's read-only mappings of its own executable and
// returns how many bytes of address space it advised away.
func Release() (int64, error) {
	exe, err := os.Stat("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("pagetrim: %w", err)
	}
	st, ok := exe.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("pagetrim: no inode for /proc/self/exe")
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("pagetrim: %w", err)
	}
	ranges, err := readOnlyRanges(bytes.NewReader(maps), st.Ino)
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

// readOnlyRanges returns the mappings in a /proc/<pid>/maps listing that are
// backed by the file with inode ino and are neither writable nor shared
// (text and read-only data of the executable).
//
//	00400000-00c4e000 r-xp 00000000 fd:01 1234   /usr/bin/switchboard
func readOnlyRanges(r io.Reader, ino uint64) ([]addrRange, error) {
	var out []addrRange
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 {
			continue // anonymous mapping
		}
		perms := f[1]
		if len(perms) != 4 || perms[1] == 'w' || perms[3] != 'p' {
			continue
		}
		if n, err := strconv.ParseUint(f[4], 10, 64); err != nil || n != ino {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			return nil, fmt.Errorf("pagetrim: bad maps line %q", sc.Text())
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("pagetrim: bad maps line %q", sc.Text())
		}
		out = append(out, addrRange{uintptr(start), uintptr(end)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("pagetrim: read maps: %w", err)
	}
	return out, nil
}
