package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/daemon"
)

// validate loads the config and checks the personas it refers to and the
// tools the persona files list, as `run` does at start.
func (a *app) validate() error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	dir := cfg.ResolvePath(cfg.Personas.Dir)
	_, skipped, problems := daemon.LoadPersonaSet(cfg, dir)
	for _, e := range skipped {
		fmt.Fprintf(a.stderr, "warning: persona skipped: %v\n", e)
	}
	if problems != nil {
		return usageErr(problems)
	}
	if cfg.Path == "" {
		fmt.Fprintln(a.stdout, "the built-in defaults are valid (no config file)")
		return nil
	}
	name, err := filepath.Abs(cfg.Path)
	if err != nil {
		name = cfg.Path
	}
	fmt.Fprintf(a.stdout, "%s is valid\n", name)
	return nil
}

// editablePath is the file `config set/unset` edit: the one in use, which
// must exist. It says on stderr which file that is, as every command does.
func (a *app) editablePath() (string, error) {
	path, how, err := a.findConfig()
	if err != nil {
		return "", err
	}
	if path == "" {
		return "", usagef("%s; there is no file to edit: copy the commented config.yaml from the repository, or name a file with --config", strings.TrimSuffix(how, "; using the built-in defaults"))
	}
	fmt.Fprintf(a.stderr, "switchboard: %s\n", configNote(path, how))
	return path, nil
}

// plaintextSecretWarning is the warning after `config set` wrote a secret's
// value (not a ${VAR} reference) into the file.
func plaintextSecretWarning(key, value, path string) string {
	if !config.IsSecretKey(key) || value == "" || strings.Contains(value, "${") {
		return ""
	}
	env := config.EnvVarFor(key)
	if env == "" {
		env = "SWITCHBOARD_" + strings.ToUpper(strings.NewReplacer(".", "_", "channels.", "").Replace(key))
	}
	return fmt.Sprintf("warning: %s is now stored in plain text in %s; anyone who can read the file (or a backup of it) can use it.\n"+
		"Prefer a reference to an environment variable: export %s=… and run `switchboard config set %s '${%s}'`", key, path, env, key, env)
}
