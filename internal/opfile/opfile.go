// Package opfile reads the files an operator puts in a directory the daemon
// reads (skills.dir, personas.dir): regular files only, opened without
// blocking, bounded in size, and confined to the directory.
//
// Design decisions:
//
//   - Confinement. A file is opened through an os.Root of the directory, so
//     a symlink may point anywhere inside the directory (a symlinked skill
//     folder, a persona file linked from a subfolder) but one that leads
//     outside it (to another tree, to /dev/zero) is refused (ErrOutside).
//     The check and the open are one operation: the file cannot be swapped
//     for a link out between them. The directory itself may be a symlink.
//   - No blocking. The file is opened with O_NONBLOCK (a FIFO opens at once
//     instead of waiting for a writer) and the opened descriptor is checked
//     with fstat: anything but a regular file (FIFO, socket, device,
//     directory) is refused (ErrNotRegular) before a byte is read. Checking
//     the descriptor, not the path, leaves no window between check and read.
//   - Bounded. At most max bytes are accepted: a file whose size is over
//     max is refused unread, and the read goes through an io.LimitReader of
//     max+1 bytes, so a file that grows while it is read is refused too
//     (ErrTooLarge). Nothing of a refused file is returned.
//
// Refusals are *Error values that carry no file name (callers name the
// file in their own error type); their text is meant for an operator:
// "refused: not a regular file (a named pipe)", "file is 1073741824 bytes,
// more than the 262144 allowed", "refused: it leads outside DIR (a
// symlink)".
//
// Dependencies: the standard library only, so the leaf packages that read
// operator files (personas) can use it.
package opfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The reasons a file is refused; match them with errors.Is.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrOutside    = errors.New("outside the directory")
	ErrTooLarge   = errors.New("file too large")
)

// Error is a refusal: its text is for an operator and names no path;
// errors.Is matches it to its reason (ErrNotRegular, ErrOutside,
// ErrTooLarge).
type Error struct {
	Reason error
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the reason.
func (e *Error) Unwrap() error { return e.Reason }

func refuse(reason error, format string, a ...any) error {
	return &Error{Reason: reason, Msg: fmt.Sprintf(format, a...)}
}

// Dir is an operator's directory, open for reading its files. Close it when
// done.
type Dir struct {
	path string
	root *os.Root
}

// Open opens the directory path.
func Open(path string) (*Dir, error) {
	root, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	return &Dir{path: path, root: root}, nil
}

// Close releases the directory.
func (d *Dir) Close() error { return d.root.Close() }

// ReadFile reads name (a slash-separated path relative to the directory):
// a regular file of at most max bytes whose location, symlinks resolved,
// is inside the directory. Refusals wrap ErrOutside, ErrNotRegular or
// ErrTooLarge; other errors are the operating system's (fs.ErrNotExist for
// a missing file).
func (d *Dir) ReadFile(name string, max int64) ([]byte, error) {
	f, err := d.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if d.escapes(name, err) {
			return nil, refuse(ErrOutside, "refused: it leads outside %s (a symlink)", d.path)
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, refuse(ErrNotRegular, "refused: not a regular file (%s)", kind(fi.Mode()))
	}
	if fi.Size() > max {
		return nil, refuse(ErrTooLarge, "file is %d bytes, more than the %d allowed", fi.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, refuse(ErrTooLarge, "file is more than the %d bytes allowed (it grew while being read)", max)
	}
	return data, nil
}

// ReadFile reads the file at path, confined to the directory that holds
// it, as Dir.ReadFile does.
func ReadFile(path string, max int64) ([]byte, error) {
	d, err := Open(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadFile(filepath.Base(path), max)
}

// escapes reports whether opening name failed because a symlink leads out
// of the directory. os.Root enforces the rule (its error is not exported);
// this only decides how the refusal is worded.
func (d *Dir) escapes(name string, err error) bool {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return false
	}
	base, berr := filepath.EvalSymlinks(d.path)
	real, rerr := filepath.EvalSymlinks(filepath.Join(d.path, filepath.FromSlash(name)))
	if berr != nil || rerr != nil {
		return strings.Contains(err.Error(), "escapes")
	}
	rel, rerr := filepath.Rel(base, real)
	return rerr != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// kind names a non-regular file type for an operator.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	default:
		return "type " + m.Type().String()
	}
}
