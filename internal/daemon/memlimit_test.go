package daemon

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// fakeRoot writes files (path under the root -> content) into a temporary
// file system root.
func fakeRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCgroupMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name  string
		files map[string]string
		want  int64 // 0: no limit
	}{
		{"v2, container with its own cgroup namespace", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "268435456\n",
		}, 256 * mib},
		{"v2, no limit", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "max\n",
		}, 0},
		{"v2, systemd service with MemoryMax", map[string]string{
			"proc/self/cgroup": "0::/system.slice/switchboard.service\n",
			"sys/fs/cgroup/system.slice/switchboard.service/memory.max": "536870912\n",
			"sys/fs/cgroup/system.slice/memory.max":                     "max\n",
		}, 512 * mib},
		{"v2, a parent's limit is smaller", map[string]string{
			"proc/self/cgroup":                        "0::/user.slice/app\n",
			"sys/fs/cgroup/user.slice/app/memory.max": "max\n",
			"sys/fs/cgroup/user.slice/memory.max":     "134217728\n",
		}, 128 * mib},
		{"v1, container without a cgroup namespace (its path is not under the mount)", map[string]string{
			"proc/self/cgroup":                           "12:pids:/docker/abc\n4:memory:/docker/abc\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "1073741824\n",
		}, 1024 * mib},
		{"v1, unlimited", map[string]string{
			"proc/self/cgroup":                           "4:memory:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
		}, 0},
		{"hybrid: v1 memory unlimited, v2 without the memory controller", map[string]string{
			"proc/self/cgroup": "4:memory:/process_api/x\n0::/\n",
			"sys/fs/cgroup/memory/process_api/x/memory.limit_in_bytes": "9223372036854771712\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":               "9223372036854771712\n",
		}, 0},
		{"both hierarchies limit: the smaller wins", map[string]string{
			"proc/self/cgroup": "4:cpu,memory:/a\n0::/a\n",
			"sys/fs/cgroup/memory/a/memory.limit_in_bytes": "209715200\n",
			"sys/fs/cgroup/a/memory.max":                   "104857600\n",
		}, 100 * mib},
		{"no /proc/self/cgroup", map[string]string{}, 0},
		{"garbage", map[string]string{
			"proc/self/cgroup":         "nonsense\n0::/\n",
			"sys/fs/cgroup/memory.max": "lots\n",
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := cgroupMemoryLimit(fakeRoot(t, tt.files))
			if !ok {
				got = 0
			}
			if got != tt.want {
				t.Errorf("cgroupMemoryLimit = %d (ok %v), want %d", got, ok, tt.want)
			}
		})
	}
}

// Under a cgroup limit the Go memory limit becomes MemLimitPercent of it,
// unless the operator set GOMEMLIMIT; restore puts back the limit before.
func TestApplyMemLimitDefault(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	limited := fakeRoot(t, map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "1000000000\n"})
	unlimited := fakeRoot(t, map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "max\n"})
	tests := []struct {
		name, env, root string
		wantCgroup      int64
		wantGo          int64
	}{
		{"cgroup limit, GOMEMLIMIT unset", "", limited, 1000000000, 900000000},
		{"cgroup limit, GOMEMLIMIT set by the operator", "64MiB", limited, 0, math.MaxInt64},
		{"no cgroup limit", "", unlimited, 0, math.MaxInt64},
	}
	for _, tt := range tests {
		cg, restore := ApplyMemLimitDefault(func(k string) string {
			if k == "GOMEMLIMIT" {
				return tt.env
			}
			return ""
		}, tt.root)
		if got := debug.SetMemoryLimit(-1); cg != tt.wantCgroup || got != tt.wantGo {
			t.Errorf("%s: cgroup limit %d, Go limit %d; want %d, %d", tt.name, cg, got, tt.wantCgroup, tt.wantGo)
		}
		restore()
		if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
			t.Errorf("%s: after restore the Go limit is %d, want none", tt.name, got)
		}
	}
}
