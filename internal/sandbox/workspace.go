package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// File is one workspace file: a slash-separated path relative to the
// workspace root, its content and its permission bits. Only the executable
// bit is kept: files are materialized 0644, or 0755 when any x bit is set,
// and reported back the same way.
type File struct {
	Path string
	Data []byte
	Mode fs.FileMode
}

// Limits bound the workspace written back after a command (the config's
// workspace: {max_bytes, max_files, max_file}). Zero means unbounded.
type Limits struct {
	MaxBytes int64 // all regular files together
	MaxFiles int   // number of regular files
	MaxFile  int64 // one file
}

// normMode is the mode a file is materialized with and reported back as.
func normMode(m fs.FileMode) fs.FileMode {
	if m&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// ValidPath reports why p is not an acceptable workspace path, or nil: it
// must be relative, slash-separated, clean (no "." or ".." element, no
// doubled or trailing slash), not empty, and free of NUL, backslash and
// control characters.
func ValidPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case len(p) > 1024:
		return fmt.Errorf("path %.40q…: longer than 1024 bytes", p)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q: must be relative to the workspace", p)
	case path.Clean(p) != p || p == ".":
		return fmt.Errorf("path %q: not clean (no ., .., // or trailing /)", p)
	case p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("path %q: leaves the workspace", p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return fmt.Errorf("path %q: contains a control character or backslash", p)
		}
	}
	for _, el := range strings.Split(p, "/") {
		if len(el) > 255 {
			return fmt.Errorf("path %.40q…: a name longer than 255 bytes", p)
		}
	}
	return nil
}

// checkFiles validates a snapshot: valid, unique paths, regular files only,
// no file that is also another file's directory.
func checkFiles(files []File) error {
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		if err := ValidPath(f.Path); err != nil {
			return fmt.Errorf("workspace file: %w", err)
		}
		if !f.Mode.IsRegular() {
			return fmt.Errorf("workspace file %q: not a regular file (%s)", f.Path, f.Mode.Type())
		}
		if seen[f.Path] {
			return fmt.Errorf("workspace file %q: listed twice", f.Path)
		}
		seen[f.Path] = true
	}
	for _, f := range files {
		for dir := path.Dir(f.Path); dir != "."; dir = path.Dir(dir) {
			if seen[dir] {
				return fmt.Errorf("workspace file %q: %q is a file, not a directory", f.Path, dir)
			}
		}
	}
	return nil
}

// materialize writes files below root (which exists and is empty) and, when
// uid >= 0, hands every directory and file to uid:gid.
func materialize(root string, files []File, uid, gid int) error {
	for _, f := range files {
		full := filepath.Join(root, filepath.FromSlash(f.Path))
		if err := mkdirOwned(root, filepath.Dir(full), uid, gid); err != nil {
			return err
		}
		if err := writeFileExcl(full, f.Data, normMode(f.Mode)); err != nil {
			return fmt.Errorf("materialize %q: %w", f.Path, err)
		}
		if uid >= 0 {
			if err := os.Lchown(full, uid, gid); err != nil {
				return fmt.Errorf("materialize %q: %w", f.Path, err)
			}
		}
	}
	return nil
}

func writeFileExcl(name string, data []byte, mode fs.FileMode) error {
	fh, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return err
	}
	if _, err := fh.Write(data); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Close(); err != nil {
		return err
	}
	return os.Chmod(name, mode) // the umask may have taken bits
}

// mkdirOwned creates dir and its missing parents below root, 0700, owned by
// uid:gid when uid >= 0.
func mkdirOwned(root, dir string, uid, gid int) error {
	if dir == root {
		return nil
	}
	if fi, err := os.Lstat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("materialize: %s is not a directory", dir)
		}
		return nil
	}
	if err := mkdirOwned(root, filepath.Dir(dir), uid, gid); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("materialize: %w", err)
	}
	if uid >= 0 {
		if err := os.Lchown(dir, uid, gid); err != nil {
			return fmt.Errorf("materialize: %w", err)
		}
	}
	return nil
}

// writeBack is the outcome of comparing the directory after a run with the
// snapshot it was made from.
type writeBack struct {
	Changed []File   // new or modified regular files, sorted by path
	Deleted []string // snapshot paths that are no longer regular files
	Ignored []string // entries that are not regular files (symlinks, fifos, sockets, devices, bad names)
	Refused string   // the bound that was broken; Changed and Deleted are then empty
}

// collect walks root after a run. It stats before it reads, stops as soon
// as a bound is broken (so a million files or a 10 GB file cost a walk of
// at most a bounded number of entries and no read), and reports all or
// nothing: when a bound is broken, Refused names it and nothing changes.
func collect(root string, before []File, lim Limits) (writeBack, error) {
	var wb writeBack
	type found struct {
		rel  string
		full string
		size int64
		mode fs.FileMode
	}
	var files []found
	var total int64
	// Every entry costs a stat; bound the walk itself too (empty
	// directories or symlinks cost no file but still cost time).
	maxEntries := -1
	if lim.MaxFiles > 0 {
		maxEntries = 4*lim.MaxFiles + 1000
	}
	entries := 0
	var walk func(dir, rel string) error
	var visit func(des []fs.DirEntry, dir, rel string) error
	walk = func(dir, rel string) error {
		dh, err := openDirFixing(dir)
		if err != nil {
			return err
		}
		defer dh.Close()
		for wb.Refused == "" {
			// Batches: a directory of a million entries is never listed whole.
			des, err := dh.ReadDir(256)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("write-back: %w", err)
			}
			if err := visit(des, dir, rel); err != nil {
				return err
			}
		}
		return nil
	}
	visit = func(des []fs.DirEntry, dir, rel string) error {
		for _, de := range des {
			if wb.Refused != "" {
				return nil
			}
			entries++
			if maxEntries >= 0 && entries > maxEntries {
				wb.Refused = fmt.Sprintf("workspace.max_files: more than %d entries (files, directories, links) in the workspace", maxEntries)
				return nil
			}
			name := de.Name()
			r := name
			if rel != "" {
				r = rel + "/" + name
			}
			full := filepath.Join(dir, name)
			fi, err := os.Lstat(full)
			if err != nil {
				return fmt.Errorf("write-back: %w", err)
			}
			switch {
			case fi.IsDir():
				if ValidPath(r) != nil {
					wb.Ignored = append(wb.Ignored, r+"/")
					continue
				}
				if err := walk(full, r); err != nil {
					return err
				}
			case fi.Mode().IsRegular():
				if ValidPath(r) != nil {
					wb.Ignored = append(wb.Ignored, r)
					continue
				}
				if lim.MaxFiles > 0 && len(files)+1 > lim.MaxFiles {
					wb.Refused = fmt.Sprintf("workspace.max_files: more than %d files", lim.MaxFiles)
					return nil
				}
				if lim.MaxFile > 0 && fi.Size() > lim.MaxFile {
					wb.Refused = fmt.Sprintf("workspace.max_file: %s is %d bytes, over the %d-byte limit for one file", r, fi.Size(), lim.MaxFile)
					return nil
				}
				total += fi.Size()
				if lim.MaxBytes > 0 && total > lim.MaxBytes {
					wb.Refused = fmt.Sprintf("workspace.max_bytes: the files total more than %d bytes", lim.MaxBytes)
					return nil
				}
				files = append(files, found{rel: r, full: full, size: fi.Size(), mode: fi.Mode()})
			default:
				wb.Ignored = append(wb.Ignored, r)
			}
		}
		return nil
	}
	if err := walk(root, ""); err != nil {
		return writeBack{}, err
	}
	if wb.Refused != "" {
		return writeBack{Refused: wb.Refused}, nil
	}

	old := make(map[string]File, len(before))
	for _, f := range before {
		old[f.Path] = f
	}
	present := make(map[string]bool, len(files))
	for _, f := range files {
		present[f.rel] = true
		prev, had := old[f.rel]
		if had && int64(len(prev.Data)) == f.size && normMode(prev.Mode) == normMode(f.mode) {
			data, err := readBounded(f.full, f.size)
			if err != nil {
				return writeBack{}, err
			}
			if bytes.Equal(data, prev.Data) {
				continue
			}
			wb.Changed = append(wb.Changed, File{Path: f.rel, Data: data, Mode: normMode(f.mode)})
			continue
		}
		data, err := readBounded(f.full, f.size)
		if err != nil {
			return writeBack{}, err
		}
		wb.Changed = append(wb.Changed, File{Path: f.rel, Data: data, Mode: normMode(f.mode)})
	}
	for _, f := range before {
		if !present[f.Path] {
			wb.Deleted = append(wb.Deleted, f.Path)
		}
	}
	sort.Slice(wb.Changed, func(i, j int) bool { return wb.Changed[i].Path < wb.Changed[j].Path })
	sort.Strings(wb.Deleted)
	sort.Strings(wb.Ignored)
	return wb, nil
}

// readBounded reads a regular file that stat said is size bytes, never more
// than that (the sandbox is gone, but be strict anyway), without following
// a symlink.
func readBounded(name string, size int64) ([]byte, error) {
	fh, err := openFixing(name)
	if err != nil {
		return nil, fmt.Errorf("write-back: %w", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, size+1))
	if err != nil {
		return nil, fmt.Errorf("write-back: %w", err)
	}
	if int64(len(data)) != size {
		return nil, fmt.Errorf("write-back: %s changed size while being read", filepath.Base(name))
	}
	return data, nil
}

// openFixing opens a file for reading; if the command took away its read
// permission (chmod 000), it gives it back first. Root reads anyway.
func openFixing(name string) (*os.File, error) {
	fh, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrPermission) {
		if cerr := os.Chmod(name, 0o600); cerr == nil {
			fh, err = os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		}
	}
	return fh, err
}

// openDirFixing opens a directory for listing, giving back permissions the
// command took away (chmod 000 on a directory) when needed.
func openDirFixing(dir string) (*os.File, error) {
	dh, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
	if errors.Is(err, fs.ErrPermission) {
		if cerr := os.Chmod(dir, 0o700); cerr == nil {
			dh, err = os.OpenFile(dir, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("write-back: %w", err)
	}
	return dh, nil
}

// removeAll deletes a run's directory even where the command removed the
// owner's write or search permission on its subdirectories.
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
