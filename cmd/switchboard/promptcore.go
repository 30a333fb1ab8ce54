package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/daemon"
)

// promptCore builds the agent `switchboard prompt` renders with, when no
// daemon holds the store (locate decided). prompt only reads, and it is
// useful before the first start (to check a persona), so it must not create
// anything: without a database the core runs on a throwaway data directory
// (and, when the configured personas directory does not exist yet, a
// throwaway one for the default persona files) that release removes.
func (a *app) promptCore(cfg *config.Config) (core *daemon.Core, release func(), err error) {
	if requireData(cfg) == nil {
		core, err := daemon.BuildCore(cfg, a.logger(cfg, levelWarn), nil)
		if err != nil {
			return nil, nil, err
		}
		return core, func() { core.Close() }, nil
	}
	tmp, err := os.MkdirTemp("", "switchboard-prompt-")
	if err != nil {
		return nil, nil, fmt.Errorf("prompt: a scratch directory for the empty store: %w", err)
	}
	dry := *cfg // the caller's config stays as loaded
	dry.Bot.DataDir = filepath.Join(tmp, "data")
	if _, err := os.Stat(cfg.ResolvePath(cfg.Personas.Dir)); errors.Is(err, fs.ErrNotExist) {
		dry.Personas.Dir = filepath.Join(tmp, "personas") // built-ins only, as on the first start
	}
	core, err = daemon.BuildCore(&dry, a.logger(cfg, levelWarn), nil)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	return core, func() {
		core.Close()
		os.RemoveAll(tmp)
	}, nil
}
