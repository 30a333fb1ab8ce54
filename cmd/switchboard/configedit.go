package main

// `config set` and `config unset`. With the daemon running, the change is
// checked by the daemon before anything is written: it loads the edited file
// exactly as its reload would (its environment, its personas directory;
// internal/daemon/configcheck.go), so a change it would refuse is not written
// (exit 1, its reason with file:line). An accepted change is written, applied
// (the daemon reloads it now, or its file watcher already has) and the
// command prints what took effect; keys read only at start are saved with
// "saved; takes effect at the next restart". Without a daemon (nothing
// answers at server.listen) the edit is checked here, in this shell's
// environment, as it always was.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/memory"
)

// editTimeout bounds the daemon's check and its reload (a reload restarts
// the channels whose settings changed).
const editTimeout = 60 * time.Second

// editConfig sets key to value in the config file in use (unset: removes it).
func (a *app) editConfig(ctx context.Context, key, value string, unset bool) error {
	path, err := a.editablePath()
	if err != nil {
		return err
	}
	before, after, err := config.EditText(path, key, value, unset)
	if err != nil {
		return usageErr(err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	verb := "set"
	if unset {
		verb = "unset"
	}
	done := fmt.Sprintf("%s %s in %s", verb, key, abs)
	if bytes.Equal(before, after) {
		fmt.Fprintln(a.stdout, done+" (it already was; nothing changed)")
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, editTimeout)
	defer cancel()
	c, check, err := a.askDaemon(ctx, path, abs, before, after)
	if err != nil {
		return err
	}
	if c == nil { // no daemon to ask: check here, as it runs here
		if _, err := config.CheckFile(path, after); err != nil {
			return usageErr(fmt.Errorf("config: refusing to change %s (the file is unchanged): %w", key, err))
		}
	} else if !check.OK {
		return fmt.Errorf("the running daemon would refuse this change, so nothing was written: %s", check.Error)
	}
	if err := config.WriteVerified(path, after, before); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, done)
	if !unset {
		if w := plaintextSecretWarning(key, value, path); w != "" {
			fmt.Fprintln(a.stderr, w)
		}
	}
	if c == nil {
		return nil
	}
	var ch daemon.ConfigChange
	if err := c.call(ctx, http.MethodPost, "/admin/config/reload", url.Values{"digest": {config.DigestOf(after)}}, &ch); err != nil {
		return fmt.Errorf("the change is written, but the daemon did not confirm applying it (its file watcher may still): %w", err)
	}
	if ch.Already { // the watcher was first: what the check foresaw
		ch = check.Change
	}
	a.printChange(ch)
	if ch.Error != "" {
		return fmt.Errorf("the change is written, but the daemon's reload failed: %s", ch.Error)
	}
	return nil
}

// askDaemon asks the running daemon to check after, the edited file. It
// returns a nil client when there is no daemon to ask (nothing answers at
// server.listen as the file names it, no listener, another file, or a daemon
// without the check), having said why where it matters; an error only when
// a daemon answers but cannot be asked.
func (a *app) askDaemon(ctx context.Context, path, abs string, before, after []byte) (*daemonClient, daemon.ConfigCheck, error) {
	var check daemon.ConfigCheck
	cfg := config.ParseLenient(path, before, os.LookupEnv)
	if err := a.applyDataDir(cfg); err != nil {
		return nil, check, err
	}
	c, err := newDaemonClient(cfg, a.stderr)
	if err != nil { // no listener: no daemon can be asked
		return nil, check, nil
	}
	c.mayBeDown = true
	err = c.call(ctx, http.MethodPost, "/admin/config/check", url.Values{"path": {abs}, "text": {string(after)}}, &check)
	switch {
	case errors.Is(err, errNoDaemon):
		if storeHeld(cfg) {
			fmt.Fprintf(a.stderr, "switchboard: warning: a daemon holds %s but nothing answers at %s, where this file says it listens (server.listen changed since it started?); checking here, in this shell's environment: its own reload may still refuse the change (see its log)\n",
				storeName(cfg), strings.TrimPrefix(c.base, "http://"))
		}
		return nil, check, nil
	case httpStatus(err) == http.StatusNotFound:
		fmt.Fprintf(a.stderr, "switchboard: note: the daemon at %s cannot check config changes (an older version?); checking here, in this shell's environment\n", strings.TrimPrefix(c.base, "http://"))
		return nil, check, nil
	case err != nil:
		return nil, check, fmt.Errorf("nothing was written: could not ask the running daemon to check the change: %w", err)
	case !check.SameFile:
		where := check.Path
		if where == "" {
			where = "the built-in defaults (no file)"
		}
		fmt.Fprintf(a.stderr, "switchboard: note: the daemon at %s runs %s, not this file; checking here, in this shell's environment\n", strings.TrimPrefix(c.base, "http://"), where)
		return nil, check, nil
	}
	return c, check, nil
}

// printChange says what the daemon's reload did.
func (a *app) printChange(ch daemon.ConfigChange) {
	var live []string
	if len(ch.Applied) > 0 {
		live = append(live, "applied "+strings.Join(ch.Applied, ", "))
	}
	if len(ch.Restarted) > 0 {
		live = append(live, "restarted channel "+strings.Join(ch.Restarted, ", "))
	}
	switch {
	case len(live) > 0:
		fmt.Fprintf(a.stdout, "the running daemon reloaded it: %s\n", strings.Join(live, "; "))
	case len(ch.RestartNeeded) == 0 && ch.Error == "":
		fmt.Fprintln(a.stdout, "the running daemon reloaded it: nothing it runs changed")
	}
	if len(ch.RestartNeeded) > 0 {
		fmt.Fprintf(a.stdout, "saved; takes effect at the next restart (%s)\n", strings.Join(ch.RestartNeeded, ", "))
	}
	for _, p := range ch.PersonasSkipped {
		fmt.Fprintf(a.stderr, "warning: persona skipped: %s\n", p)
	}
}

// storeHeld reports whether a process (a daemon) holds cfg's bolt database.
func storeHeld(cfg *config.Config) bool {
	if cfg.Storage.Backend == "postgres" || requireData(cfg) != nil {
		return false
	}
	st, err := daemon.OpenStore(cfg, nil)
	if err != nil {
		return errors.Is(err, memory.ErrInUse)
	}
	_ = st.Close()
	return false
}
