package config

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/switchboard-bot/switchboard/internal/opfile"
)

// MaxFileSize bounds config.yaml: a real configuration is a few KiB, and a
// file read whole into memory must not be able to take the daemon's (or the
// CLI's) memory with it.
const MaxFileSize = 1 << 20

// readFile reads a config file: a regular file (symlinks followed) of at
// most MaxFileSize bytes, opened without blocking (internal/opfile), so a
// named pipe or a device named as the config is refused at once instead of
// hanging the daemon or filling its memory. A refusal is a clear error
// naming the file; nothing is decoded. A missing file is fs.ErrNotExist.
func readFile(path string) ([]byte, error) {
	return ReadBounded(path, "a configuration")
}

// ReadBounded reads the file at path as readFile does; what names what the
// file should hold, for the errors ("a configuration").
func ReadBounded(path, what string) ([]byte, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	data, err := opfile.ReadFile(real, MaxFileSize)
	switch {
	case errors.Is(err, opfile.ErrTooLarge):
		return nil, fmt.Errorf("%s: the file is larger than %d KiB; %s this big is not one (check that it is the right file)",
			displayName(path), MaxFileSize>>10, what)
	case errors.Is(err, opfile.ErrNotRegular):
		return nil, fmt.Errorf("%s: %w; %s must be a regular file (check that it is the right file)", displayName(path), err, what)
	case err != nil:
		return nil, err
	}
	return data, nil
}
