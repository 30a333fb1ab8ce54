package personas

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

//go:embed *.md
var defaultFiles embed.FS

// DefaultFile returns the embedded default file for name (assistant,
// reporter, buddy), e.g. for `switchboard config` to show or restore it.
func DefaultFile(name string) ([]byte, bool) {
	if !ValidName(name) {
		return nil, false
	}
	data, err := fs.ReadFile(defaultFiles, name+".md")
	if err != nil {
		return nil, false
	}
	return data, true
}

// WriteDefaults writes the embedded default personas into dir on first run:
// when dir does not exist or contains no persona file (*.md not starting
// with "."). It creates dir with mode 0755 and each file with mode 0644, and
// never overwrites a file: each is written under a temporary name and
// hard-linked into place. It returns the paths it wrote (none when dir
// already holds personas).
func WriteDefaults(dir string) ([]string, error) {
	if dir == "" {
		return nil, errors.New("personas: write defaults: empty directory")
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("personas: create %s: %w", dir, err)
		}
		if err := os.Chmod(dir, 0o755); err != nil { // MkdirAll is subject to the umask
			return nil, fmt.Errorf("personas: create %s: %w", dir, err)
		}
	case err != nil:
		return nil, fmt.Errorf("personas: read directory %s: %w", dir, err)
	default:
		for _, e := range entries {
			if n := e.Name(); !strings.HasPrefix(n, ".") && filepath.Ext(n) == ".md" {
				return nil, nil
			}
		}
	}
	defs, err := fs.ReadDir(defaultFiles, ".")
	if err != nil {
		return nil, fmt.Errorf("personas: embedded defaults: %w", err)
	}
	// The files are written side by side: each waits for its fsync, and on
	// a busy disk three fsyncs in a row held up the first start by up to a
	// few hundred milliseconds (BENCHMARKS.md, "Issue 35").
	type result struct {
		path string
		ok   bool
		err  error
	}
	results := make([]result, len(defs))
	var wg sync.WaitGroup
	for i, d := range defs {
		wg.Go(func() {
			data, err := fs.ReadFile(defaultFiles, d.Name())
			if err != nil {
				results[i].err = fmt.Errorf("personas: embedded default %s: %w", d.Name(), err)
				return
			}
			path := filepath.Join(dir, d.Name())
			ok, err := writeNew(path, data)
			results[i] = result{path: path, ok: ok, err: err}
		})
	}
	wg.Wait()
	var written []string
	for _, r := range results {
		if r.err != nil {
			return written, r.err
		}
		if r.ok {
			written = append(written, r.path)
		}
	}
	return written, nil
}

// writeNew writes data to path with mode 0644 unless path exists. The data
// goes to a temporary file first and is linked into place, so a crash never
// leaves a half-written persona and an existing file is never replaced.
// It reports whether it wrote the file.
func writeNew(path string, data []byte) (bool, error) {
	dir, base := filepath.Split(path)
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return false, fmt.Errorf("personas: write %s: %w", path, err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Chmod(0o644)
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return false, fmt.Errorf("personas: write %s: %w", path, werr)
	}
	err = os.Link(tmpName, path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrExist):
		return false, nil
	}
	// The file system does not support hard links: create exclusively.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("personas: write %s: %w", path, err)
	}
	_, werr = f.Write(data)
	if werr == nil {
		werr = f.Chmod(0o644)
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return false, fmt.Errorf("personas: write %s: %w", path, werr)
	}
	return true, nil
}
