package loadtest

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Section is how much of one section of the daemon's executable is
// resident in its address space.
type Section struct {
	Name        string
	SizeKiB     int64
	ResidentKiB int64
}

// ExeSections splits pid's resident pages of its own executable by ELF
// section (.text, .rodata, .gopclntab, …), from /proc/<pid>/maps and the
// present bits of /proc/<pid>/pagemap. A page shared by two sections
// counts for both. It says where the file-backed part of the RSS lives: the
// kernel maps a file's pages 64 KiB at a time around each fault
// ("fault-around"), so a section touched here and there is resident almost
// whole.
func ExeSections(pid int) ([]Section, error) {
	proc := "/proc/" + strconv.Itoa(pid)
	exe, err := os.Readlink(proc + "/exe")
	if err != nil {
		return nil, fmt.Errorf("exe sections: %w", err)
	}
	maps, err := exeMappings(proc+"/maps", exe)
	if err != nil {
		return nil, err
	}
	f, err := elf.Open(proc + "/exe")
	if err != nil {
		return nil, fmt.Errorf("exe sections: %w", err)
	}
	defer f.Close()
	pm, err := os.Open(proc + "/pagemap")
	if err != nil {
		return nil, fmt.Errorf("exe sections: %w", err)
	}
	defer pm.Close()
	const page = 4096
	var out []Section
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Type == elf.SHT_NOBITS || s.Size == 0 {
			continue
		}
		sec := Section{Name: s.Name, SizeKiB: int64(s.Size) / 1024}
		for _, m := range maps {
			lo, hi := max(s.Offset, m.off), min(s.Offset+s.Size, m.off+(m.end-m.start))
			if lo >= hi {
				continue
			}
			first := (m.start + (lo - m.off)) / page
			last := (m.start + (hi - m.off) - 1) / page
			n, err := presentPages(pm, first, last-first+1)
			if err != nil {
				return nil, err
			}
			sec.ResidentKiB += n * page / 1024
		}
		out = append(out, sec)
	}
	return out, nil
}

type exeMapping struct{ start, end, off uint64 }

// exeMappings are the mappings of the file exe in a /proc/<pid>/maps listing.
func exeMappings(path, exe string) ([]exeMapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("exe sections: %w", err)
	}
	defer f.Close()
	var out []exeMapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != exe {
			continue
		}
		lo, hi, _ := strings.Cut(fields[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(fields[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("exe sections: malformed maps line %q", sc.Text())
		}
		out = append(out, exeMapping{start, end, off})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("exe sections: %w", err)
	}
	return out, nil
}

// presentPages counts the present pages among n pages from page number
// first in a pagemap file (8 bytes a page, bit 63: present).
func presentPages(pm io.ReaderAt, first, n uint64) (int64, error) {
	buf := make([]byte, n*8)
	if _, err := pm.ReadAt(buf, int64(first*8)); err != nil {
		return 0, fmt.Errorf("exe sections: read pagemap: %w", err)
	}
	var c int64
	for i := uint64(0); i < n; i++ {
		if binary.LittleEndian.Uint64(buf[i*8:])>>63 == 1 {
			c++
		}
	}
	return c, nil
}
