package daemon

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// The Go memory limit under a cgroup's: a daemon collecting at
// DefaultGCPercent lets its heap grow to three times what is live before it
// collects, which a container sized for the live heap may not have. So when
// the daemon runs in a cgroup with a memory limit (a container's, systemd's
// MemoryMax) and GOMEMLIMIT is not set, the Go runtime's soft limit is
// MemLimitPercent of it: near the limit the collector works harder instead
// of the kernel killing the process. Without a cgroup limit nothing changes.

// MemLimitPercent is the share of the cgroup's memory limit given to Go.
// The rest is for what Go does not count: the pages of the BoltDB file
// mapped into the process and charged to the cgroup, the binary's own pages,
// the kernel's buffers for the process's sockets.
const MemLimitPercent = 90

// cgroupUnlimited is where cgroup v1 reports "no limit" (it prints
// 9223372036854771712, a page-rounded MaxInt64).
const cgroupUnlimited = int64(1) << 62

// ApplyMemLimitDefault sets the Go memory limit to MemLimitPercent of the
// cgroup's memory limit unless GOMEMLIMIT is set (getenv is os.Getenv); root
// is the file system root ("/"; tests pass a fake tree). It returns the
// cgroup's limit it applied (0 when it applied none) and restore, which puts
// back the limit before.
func ApplyMemLimitDefault(getenv func(string) string, root string) (cgroupLimit int64, restore func()) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, func() {}
	}
	limit, ok := cgroupMemoryLimit(root)
	if !ok {
		return 0, func() {}
	}
	previous := debug.SetMemoryLimit(goMemLimit(limit))
	return limit, func() { debug.SetMemoryLimit(previous) }
}

// goMemLimit is the Go memory limit for cgroup limit cgroup (0 for 0).
func goMemLimit(cgroup int64) int64 { return cgroup / 100 * MemLimitPercent }

// cgroupMemoryLimit is the smallest memory limit on the path of this
// process's cgroup (v2 memory.max, or v1 memory.limit_in_bytes), read under
// root; ok is false when there is none. In a container with its own cgroup
// namespace the path is "/" and the container's limit sits at the mount's
// top; without one the path names the container's cgroup, which may not be
// under the mount: then the top of the mount is the container's.
func cgroupMemoryLimit(root string) (limit int64, ok bool) {
	data, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0, false
	}
	limit = math.MaxInt64
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		id, rest, _ := strings.Cut(sc.Text(), ":")
		controllers, cgPath, found := strings.Cut(rest, ":")
		if !found {
			continue
		}
		var dir, file string
		switch {
		case id == "0" && controllers == "":
			dir, file = "sys/fs/cgroup", "memory.max"
		case hasController(controllers, "memory"):
			dir, file = "sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		if v, found := smallestOnPath(filepath.Join(root, dir), cgPath, file); found && v < limit {
			limit, ok = v, true
		}
	}
	return limit, ok
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// smallestOnPath reads file in cgPath's directory under mount and in each of
// its parents up to the mount's top, and returns the smallest limit found.
func smallestOnPath(mount, cgPath, file string) (int64, bool) {
	best, ok := int64(math.MaxInt64), false
	for p := path.Clean("/" + cgPath); ; p = path.Dir(p) {
		if v, found := readLimit(filepath.Join(mount, p, file)); found && v < best {
			best, ok = v, true
		}
		if p == "/" {
			return best, ok
		}
	}
}

// readLimit reads a cgroup memory limit file: a byte count, or "max" (v2)
// or a value of cgroupUnlimited or more (v1) for none.
func readLimit(name string) (int64, bool) {
	b, err := os.ReadFile(name)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v <= 0 || v >= cgroupUnlimited {
		return 0, false // "max", unlimited, or unreadable
	}
	return v, true
}
