package config

import (
	"fmt"
	"io"
	"os"
)

// MaxFileSize bounds config.yaml: a real configuration is a few KiB, and a
// file read whole into memory must not be able to take the daemon's (or the
// CLI's) memory with it.
const MaxFileSize = 1 << 20

// readFile reads a config file of at most MaxFileSize bytes. A larger file
// is a clear error naming the file and the limit; nothing is decoded.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: the file is larger than %d KiB; a configuration this big is not one (check that it is the right file)",
			displayName(path), MaxFileSize>>10)
	}
	return data, nil
}
