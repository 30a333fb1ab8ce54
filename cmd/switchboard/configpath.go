package main

// Which config file a command uses, and where its data lives.
//
// A file named explicitly — with --config/-c, or else with the
// SWITCHBOARD_CONFIG environment variable — must exist. Without one, the
// first of these that exists is used:
//
//  1. ./config.yaml (the working directory)
//  2. <user config dir>/switchboard/config.yaml ($XDG_CONFIG_HOME or ~/.config on Linux)
//  3. /etc/switchboard/config.yaml
//
// and with none of them the built-in defaults apply. Every command says on
// stderr which file it used (`run` logs it). --data-dir (or
// SWITCHBOARD_DATA_DIR) overrides bot.data_dir for every command.
//
// Read-only commands (sessions list/show/export, pairing list, audit, jobs
// list) never create the data directory: when the database does not exist
// they say so instead of answering "nothing here" from a new, empty one.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchboard-bot/switchboard/internal/config"
)

const (
	envConfig  = "SWITCHBOARD_CONFIG"
	envDataDir = "SWITCHBOARD_DATA_DIR"
)

// configSearchPath is the lookup order used when no file is named.
func configSearchPath() []string {
	paths := []string{"config.yaml"}
	if dir, err := os.UserConfigDir(); err == nil && dir != "" {
		paths = append(paths, filepath.Join(dir, "switchboard", "config.yaml"))
	}
	return append(paths, "/etc/switchboard/config.yaml")
}

// findConfig returns the config file to load ("" = none, use the defaults)
// and a few words on how it was chosen.
func (a *app) findConfig() (path, how string, err error) {
	name, from := a.configPath, "--config"
	if a.configFrom != "" {
		from = a.configFrom
	}
	if name == "" {
		name, from = a.getenv(envConfig), envConfig
	}
	if name != "" {
		info, err := os.Stat(name)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return "", "", usagef("config file %s does not exist (named by %s); create it from the commented config.yaml in the repository, or fix the path", name, from)
		case err != nil:
			return "", "", usagef("config file %s: %v", name, err)
		case info.IsDir():
			return "", "", usagef("config file %s is a directory (named by %s)", name, from)
		}
		return name, "named by " + from, nil
	}
	searched := configSearchPath()
	for _, p := range searched {
		if info, err := os.Stat(p); err == nil && !info.IsDir() {
			return p, "found by lookup", nil
		}
	}
	return "", "no config file found (looked for " + strings.Join(searched, ", ") + "); using the built-in defaults", nil
}

func (a *app) getenv(k string) string {
	if a.env != nil {
		return a.env(k)
	}
	return os.Getenv(k)
}

// loadConfigQuiet finds and loads the config (errors are the operator's:
// exit 2) and applies --data-dir; note says which file was used.
func (a *app) loadConfigQuiet() (cfg *config.Config, note string, err error) {
	path, how, err := a.findConfig()
	if err != nil {
		return nil, "", err
	}
	if path == "" {
		cfg, err = config.Parse("", nil, os.LookupEnv)
	} else {
		cfg, err = config.Load(path)
	}
	if err != nil {
		return nil, "", usageErr(err)
	}
	if err := a.applyDataDir(cfg); err != nil {
		return nil, "", err
	}
	return cfg, configNote(path, how), nil
}

// configNote is the "using config FILE (how)" notice every command prints
// on stderr (how alone when no file is used).
func configNote(path, how string) string {
	if path == "" {
		return how
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	return fmt.Sprintf("using config %s (%s)", abs, how)
}

// applyDataDir applies --data-dir (or SWITCHBOARD_DATA_DIR) to cfg.
func (a *app) applyDataDir(cfg *config.Config) error {
	dataDir := a.dataDir
	if dataDir == "" {
		dataDir = a.getenv(envDataDir)
	}
	if dataDir != "" {
		abs, err := filepath.Abs(dataDir)
		if err != nil {
			return usagef("--data-dir %s: %v", dataDir, err)
		}
		cfg.Bot.DataDir = abs
	}
	return nil
}

// loadConfig is loadConfigQuiet that says on stderr which file it used.
func (a *app) loadConfig() (*config.Config, error) {
	cfg, note, err := a.loadConfigQuiet()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(a.stderr, "switchboard: %s\n", note)
	return cfg, nil
}

// requireData fails when the database does not exist yet, so a read-only
// command never creates a data directory (and never answers "nothing" from
// an empty database in the wrong place).
func requireData(cfg *config.Config) error {
	if cfg.Storage.Backend == "postgres" {
		return nil // the database exists or Open says why not
	}
	db := cfg.DBPath()
	if _, err := os.Stat(db); errors.Is(err, os.ErrNotExist) {
		where := "the built-in defaults"
		if cfg.Path != "" {
			where = cfg.Path
		}
		return fmt.Errorf("no data yet: %s does not exist (config: %s); start the daemon once with this config, or point --data-dir / bot.data_dir at the existing data", db, where)
	}
	return nil
}

// storeName names the store for messages: the bolt file, or the PostgreSQL
// database (never its URL, which holds a password).
func storeName(cfg *config.Config) string {
	if cfg.Storage.Backend == "postgres" {
		return "the PostgreSQL database (storage.postgres.url)"
	}
	return cfg.DBPath()
}
