package main

// First start in a container (issue 28): the config lives in the volume.
//
// The image ships its default config read-only (root's) at
// /usr/share/switchboard/config.yaml and names it in SWITCHBOARD_CONFIG_SEED;
// SWITCHBOARD_CONFIG names /data/config.yaml, in the volume the daemon's user
// owns. When `run` starts and the config file named by --config or
// SWITCHBOARD_CONFIG does not exist, it is written from the seed first (mode
// 0600, the daemon user's), so `config set`, the console's config page and
// persona editor can change it and the changes persist. An existing file is
// never written over: the copy goes to a temporary file linked into place,
// which fails when the file appeared meanwhile. The seeded config's
// skills.dir is created too, so an operator finds where skills go (the
// daemon writes the persona files itself, personas.WriteDefaults).
//
// Without SWITCHBOARD_CONFIG_SEED (outside the image) nothing changes: a
// named config file that does not exist is an error, as before.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/switchboard-bot/switchboard/internal/config"
)

const envConfigSeed = "SWITCHBOARD_CONFIG_SEED"

// seeded says what seedConfig wrote, for the start log.
type seeded struct {
	file, from string
}

// seedConfig writes the named config file from SWITCHBOARD_CONFIG_SEED when
// both are set and the file does not exist. It returns what it wrote (nil
// when nothing was). A seed that cannot be read (missing, not a regular
// file, over config.MaxFileSize) is the operator's (or the image's) mistake,
// exit 2; a config that cannot be written is a runtime
// failure, exit 1, that says which directory needs to be writable.
func (a *app) seedConfig() (*seeded, error) {
	from := a.getenv(envConfigSeed)
	name := a.configPath
	if name == "" {
		name = a.getenv(envConfig)
	}
	if from == "" || name == "" {
		return nil, nil
	}
	if _, err := os.Lstat(name); !errors.Is(err, fs.ErrNotExist) {
		return nil, nil // it exists (or findConfig says what is wrong with it)
	}
	// Read as the config itself is: a regular file only, never blocking,
	// at most config.MaxFileSize (a device or a named pipe here would
	// otherwise fill the memory or hang the start).
	data, err := config.ReadBounded(from, "a default config")
	if err != nil {
		return nil, usagef("%s names the default config, which cannot be used: %w", envConfigSeed, err)
	}
	wrote, err := writeNewFile(name, data, 0o600)
	if err != nil {
		return nil, fmt.Errorf("first start: could not write the default config %s from %s: %w; %s must be writable by the daemon's user (uid %d)",
			name, from, err, filepath.Dir(name), os.Getuid())
	}
	if !wrote {
		return nil, nil
	}
	return &seeded{file: name, from: from}, nil
}

// seedDirs creates the seeded config's skills.dir (mode 0755) when missing.
func seedDirs(cfg *config.Config) error {
	dir := cfg.ResolvePath(cfg.Skills.Dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("first start: create skills.dir: %w", err)
	}
	return nil
}

// writeNewFile writes data to path with mode perm unless path exists, and
// reports whether it did. The data goes to a temporary file in the same
// directory that is hard-linked into place, so a crash never leaves half a
// file and an existing one is never replaced; where hard links are not
// supported it creates the file exclusively instead.
func writeNewFile(path string, data []byte, perm fs.FileMode) (bool, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return false, err
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Chmod(perm)
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return false, werr
	}
	err = os.Link(tmpName, path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrExist):
		return false, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_, werr = f.Write(data)
	if werr == nil {
		werr = f.Chmod(perm)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
		return false, werr
	}
	return true, nil
}
