package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Workspace is the workspace section: bounds of each chat's files (the file
// tools, exec's write-back; memory.WorkspaceLimits). A change that would
// exceed one is refused whole, with an error naming the key.
type Workspace struct {
	MaxBytes Size `yaml:"max_bytes"` // all of one chat's files together (50MiB)
	MaxFiles int  `yaml:"max_files"` // files per chat (1000)
	MaxFile  Size `yaml:"max_file"`  // one file (10MiB)
}

// DefaultWorkspace is the workspace section's defaults (DESIGN.md §9).
func DefaultWorkspace() Workspace {
	return Workspace{MaxBytes: 50 << 20, MaxFiles: 1000, MaxFile: 10 << 20}
}

// Size is a number of bytes, written as an integer or with a unit: B, KiB,
// MiB, GiB (powers of 1024) or KB, MB, GB (powers of 1000), e.g. 50MiB,
// "1.5 GiB", 4096. It renders as an integer number of bytes.
type Size int64

var sizeType = reflect.TypeFor[Size]()

var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
}

// ParseSize parses a size such as "50MiB", "1.5 GiB", "10 MB" or "4096".
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mul, ok := sizeUnits[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("expected a size such as 50MiB, 512KiB or 4096 (bytes), got %q", truncate(s, 60))
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("expected a size such as 50MiB, 512KiB or 4096 (bytes), got %q", truncate(s, 60))
	}
	v := math.Round(f * mul)
	if v > math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q is too large", truncate(s, 60))
	}
	return Size(v), nil
}

// String renders the size with the largest binary unit that divides it
// ("50MiB", "1536KiB", "100B").
func (s Size) String() string {
	for _, u := range []struct {
		name string
		n    int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if s != 0 && int64(s)%u.n == 0 {
			return strconv.FormatInt(int64(s)/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(int64(s), 10) + "B"
}

// decodeSize decodes a Size value.
func (d *decoder) decodeSize(n *yaml.Node, v reflect.Value, key string) {
	s, ok := d.scalarOf(n, key, "a size such as 50MiB")
	if !ok {
		return
	}
	sz, err := ParseSize(s)
	if err != nil {
		d.fail(n.Line, key, "%s: %v", key, err)
		return
	}
	v.SetInt(int64(sz))
}

// workspace checks the workspace section.
func (v *validator) workspace() {
	w := v.c.Workspace
	if w.MaxBytes < 1 {
		v.fail("workspace.max_bytes", "must be a size of at least 1 byte, got %d", int64(w.MaxBytes))
	}
	if w.MaxFiles < 1 {
		v.fail("workspace.max_files", "must be at least 1, got %d", w.MaxFiles)
	}
	if w.MaxFile < 1 {
		v.fail("workspace.max_file", "must be a size of at least 1 byte, got %d", int64(w.MaxFile))
	}
	if w.MaxFile > w.MaxBytes && w.MaxBytes >= 1 {
		v.fail("workspace.max_file", "must not be larger than workspace.max_bytes (%s), got %s", w.MaxBytes, w.MaxFile)
	}
}
