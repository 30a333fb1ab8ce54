package daemon

// Config edits checked by the running daemon. `switchboard config set/unset`
// (and the web console's config page) must not write a change the daemon's
// reload would refuse: the daemon loads the file in its own environment
// (${VAR}s the CLI's shell may not have) and with the personas directory in
// force, which the CLI cannot know. So the CLI sends the edited text to
// /admin/config/check before writing anything, and after writing asks
// /admin/config/reload to apply it and say what took effect.
//
// candidate is the one check: Reload runs it on the file it reads, the check
// endpoint on the text it is sent, the console's editor on its preview.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"

	"github.com/switchboard-bot/switchboard/internal/config"
)

// candidate loads data as the next content of old's file, as a reload
// does: strict parsing and validation in the daemon's environment, then the
// persona names and tools against the personas directory in force
// (personas.dir itself changes only at a restart).
func (d *Daemon) candidate(old *config.Config, data []byte) (*config.Config, error) {
	next, err := config.Parse(old.Path, data, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	if err := d.vet(old, next); err != nil {
		return nil, err
	}
	return next, nil
}

// vet runs the checks a reload runs beyond config.Parse.
func (d *Daemon) vet(old, next *config.Config) error {
	_, _, err := LoadPersonaSet(next, next.ResolvePath(old.Personas.Dir))
	return err
}

// ConfigChange says what a reload did or, from a check, would do.
type ConfigChange struct {
	Applied         []string `json:"applied,omitempty"`          // sections applied live
	Restarted       []string `json:"restarted,omitempty"`        // channels restarted
	RestartNeeded   []string `json:"restart_needed,omitempty"`   // keys read only at start
	PersonasSkipped []string `json:"personas_skipped,omitempty"` // persona files that did not load
	// Already: the daemon had loaded this file (its watcher was first);
	// the check's prediction says what changed.
	Already bool   `json:"already,omitempty"`
	Error   string `json:"error,omitempty"` // the reload failed or was refused
}

// ConfigCheck is /admin/config/check's answer.
type ConfigCheck struct {
	Path     string       `json:"path"`      // the daemon's config file ("" = the built-in defaults)
	SameFile bool         `json:"same_file"` // the request's file is the daemon's
	OK       bool         `json:"ok"`
	Error    string       `json:"error,omitempty"` // why a reload would refuse it, with file:line
	Change   ConfigChange `json:"change"`          // what applying it would do
}

// CheckConfigText checks data as the next content of the daemon's config
// file, as a reload would, and predicts what applying it changes.
func (d *Daemon) CheckConfigText(data []byte) ConfigCheck {
	old := d.config()
	res := ConfigCheck{Path: old.Path}
	next, err := d.candidate(old, data)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.OK, res.Change = true, predict(old, next)
	return res
}

// predict lists what apply would change from old to next (the same
// conditions, without building anything).
func predict(old, next *config.Config) ConfigChange {
	var c ConfigChange
	if changed(old.Personas, next.Personas) {
		c.Applied = append(c.Applied, "personas")
	}
	if changed(old.Access, next.Access) || !slices.Equal(old.Bot.Admins, next.Bot.Admins) {
		c.Applied = append(c.Applied, "access")
	}
	if agentChanged(old, next) {
		c.Applied = append(c.Applied, "llm/agent")
	}
	if changed(old.MCP, next.MCP) {
		c.Applied = append(c.Applied, "mcp")
	}
	if changed(old.Heartbeat, next.Heartbeat) {
		c.Applied = append(c.Applied, "heartbeat")
	}
	if changed(old.Jobs, next.Jobs) {
		c.Applied = append(c.Applied, "jobs")
	}
	if old.Log.Level != next.Log.Level {
		c.Applied = append(c.Applied, "log.level")
	}
	for _, name := range platformNames(next) {
		if changed(platformSettings(old, name), platformSettings(next, name)) {
			c.Restarted = append(c.Restarted, name)
		}
	}
	c.RestartNeeded = restartNeeded(old, next)
	return c
}

// ReloadTo applies the config file whose content has digest (as
// config.DigestOf): when the daemon already runs it (the file watcher was
// first) it says so, otherwise it reloads now. Reloads are serialized, so
// the watcher's reload of the same file afterwards finds nothing to change.
func (d *Daemon) ReloadTo(ctx context.Context, who, digest string) ConfigChange {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	if d.config().Digest() == digest {
		return ConfigChange{Already: true}
	}
	res, err := d.reloadLocked(ctx, who)
	c := ConfigChange{Applied: res.Changed, Restarted: res.Restarted, RestartNeeded: res.RestartNeeded}
	for _, e := range res.PersonaErrors {
		c.PersonasSkipped = append(c.PersonasSkipped, e.Error())
	}
	switch {
	case err != nil:
		c.Error = err.Error()
	case d.config().Digest() != digest:
		c.Error = "the file changed again before the daemon read it; it runs what the file holds now"
	}
	return c
}

// maxCheckForm bounds /admin/config/check's form: a file of
// config.MaxFileSize, form-encoded (up to three bytes a byte), and the path.
const maxCheckForm = 3*config.MaxFileSize + 64<<10

// registerConfigAPI adds the config endpoints; wrap is the admin middleware.
func (d *Daemon) registerConfigAPI(mux *http.ServeMux, wrap func(http.Handler) http.Handler) {
	mux.Handle("POST /admin/config/check", wrap(http.HandlerFunc(d.serveConfigCheck)))
	mux.Handle("POST /admin/config/reload", wrap(http.HandlerFunc(d.serveConfigReload)))
}

// serveConfigCheck answers a ConfigCheck for the form's text (the whole
// edited file) and path (the file the client edits, to tell whether it is
// the daemon's).
func (d *Daemon) serveConfigCheck(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxCheckForm)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("the file is over %d KiB", config.MaxFileSize>>10), http.StatusRequestEntityTooLarge)
			return
		}
		writeJSON(w, nil, badRequest("unreadable form: %v", err))
		return
	}
	text := r.PostFormValue("text")
	if len(text) > config.MaxFileSize {
		writeJSON(w, nil, badRequest("the file is over %d KiB", config.MaxFileSize>>10))
		return
	}
	res := d.CheckConfigText([]byte(text))
	res.SameFile = sameFile(res.Path, r.PostFormValue("path"))
	writeJSON(w, res, nil)
}

// serveConfigReload applies the file with the form's digest (ReloadTo).
func (d *Daemon) serveConfigReload(w http.ResponseWriter, r *http.Request) {
	digest := r.PostFormValue("digest")
	if digest == "" {
		writeJSON(w, nil, badRequest("no digest: say which content of the file to apply"))
		return
	}
	writeJSON(w, d.ReloadTo(r.Context(), "cli", digest), nil)
}

// sameFile reports whether the paths name one existing file.
func sameFile(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}
