package memory_test

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/switchboard-bot/switchboard/memory"
)

func TestIsStorageError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"disk full, wrapped as bolt reports it", fmt.Errorf("memory: write: %w", &fs.PathError{Op: "write", Path: "/data/switchboard.db", Err: syscall.ENOSPC}), true},
		{"quota", fmt.Errorf("append turn: %w", syscall.EDQUOT), true},
		{"read-only file system", syscall.EROFS, true},
		{"i/o error", fmt.Errorf("x: %w", syscall.EIO), true},
		{"file too large", syscall.EFBIG, true},
		{"not found", memory.ErrNotFound, false},
		{"a platform error", errors.New("telegram: 502 Bad Gateway"), false},
	} {
		if got := memory.IsStorageError(tc.err); got != tc.want {
			t.Errorf("%s: IsStorageError(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
