package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/switchboard-bot/switchboard/channels/platform"
	"github.com/switchboard-bot/switchboard/channels/web"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/netaddr"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
	"github.com/switchboard-bot/switchboard/memory/postgres"
	"github.com/switchboard-bot/switchboard/personas"
)

// ---- config ----

func (d *doctor) checkConfig() (Result, *config.Config) {
	path := d.opts.ConfigPath
	data, err := os.ReadFile(path)
	missing := false
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return Result{Name: CheckConfig, Status: StatusFail,
				Finding: fmt.Sprintf("cannot read %s: %v", path, describeFSErr(err)),
				Fix:     fmt.Sprintf("make %s a file readable by this user (chmod 600 %s), or pass --config with the right path", path, path),
			}, nil
		}
		missing, data = true, nil
	}
	var cfg *config.Config
	if d.opts.Platforms != nil {
		cfg, err = config.ParseWith(d.opts.Platforms, path, data, d.opts.LookupEnv)
	} else {
		cfg, err = config.Parse(path, data, d.opts.LookupEnv)
	}
	if err != nil {
		details := errorLines(err)
		return Result{Name: CheckConfig, Status: StatusFail,
			Finding: fmt.Sprintf("%s has %d %s", path, len(details), plural(len(details), "problem", "problems")),
			Fix:     fmt.Sprintf("correct %s at the lines shown (or `switchboard config set KEY VALUE`), then run `switchboard doctor` again", path),
			Details: details,
		}, nil
	}
	var enabled []string
	for _, name := range cfg.Platforms().Names() {
		if cfg.Channels.Enabled(name) && name != web.Name { // the web chat is part of the console
			enabled = append(enabled, name)
		}
	}
	chans := "no channels enabled"
	if len(enabled) > 0 {
		chans = "channels: " + strings.Join(enabled, ", ")
	}
	what := "loaded " + path
	if missing {
		what = path + " not found: using the built-in defaults and the environment"
	}
	return Result{Name: CheckConfig, Status: StatusOK, Finding: what + " (" + chans + ")"}, cfg
}

// errorLines splits an error's text into its lines: errors.Join (which
// config and bolt's Check use) puts one problem per line.
func errorLines(err error) []string {
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// ---- data dir ----

// checkDataDir reports on bot.data_dir and whether the database check can
// run in it.
func (d *doctor) checkDataDir() (Result, bool) {
	dir := d.cfg.ResolvePath(d.cfg.Bot.DataDir)
	f := &finding{}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		anc, afi, aerr := existingAncestor(dir)
		switch {
		case aerr != nil:
			f.add(StatusFail, fmt.Sprintf("%s does not exist and cannot be created: %v", dir, describeFSErr(aerr)),
				"point bot.data_dir at a directory this user can create")
			return f.result(CheckDataDir), false
		case !afi.IsDir():
			f.add(StatusFail, fmt.Sprintf("%s cannot be created: %s is a file, not a directory", dir, anc),
				fmt.Sprintf("move %s away or point bot.data_dir elsewhere", anc))
			return f.result(CheckDataDir), false
		case !accessible(anc, wOK|xOK):
			f.add(StatusFail, fmt.Sprintf("%s does not exist and cannot be created: %s is not writable by this user", dir, anc),
				fmt.Sprintf("create it yourself (mkdir -m 700 %s; chown it to the user switchboard runs as) or point bot.data_dir at a writable place", dir))
			return f.result(CheckDataDir), false
		}
		f.add(StatusOK, fmt.Sprintf("%s does not exist yet; it will be created (mode 700)", dir), "")
		d.checkFreeSpace(f, anc)
		return f.result(CheckDataDir), true
	case err != nil:
		f.add(StatusFail, fmt.Sprintf("cannot inspect %s: %v", dir, describeFSErr(err)),
			fmt.Sprintf("give this user access to %s (it needs to read, write and list it)", dir))
		return f.result(CheckDataDir), false
	case !fi.IsDir():
		f.add(StatusFail, fmt.Sprintf("%s is a %s, not a directory", dir, fileKind(fi)),
			fmt.Sprintf("bot.data_dir must name a directory: move %s aside (mv %s %s.bak) or set bot.data_dir to another path", dir, dir, dir))
		return f.result(CheckDataDir), false
	}

	usable := true
	if err := probeWritable(dir); err != nil {
		f.add(StatusFail, fmt.Sprintf("%s is not writable by this user: %v", dir, describeFSErr(err)),
			fmt.Sprintf("chown -R $(id -un) %s && chmod 700 %s (or run switchboard as the directory's owner)", dir, dir))
		usable = false
	} else {
		f.add(StatusOK, dir+" is a writable directory", "")
	}
	perm := fi.Mode().Perm()
	switch {
	case perm&0o002 != 0:
		f.add(StatusFail, fmt.Sprintf("it is world-writable (mode %03o): anyone on this machine can replace the database", perm),
			"chmod 700 "+dir)
	case perm&0o077 != 0:
		f.add(StatusWarn, fmt.Sprintf("it is accessible to group/others (mode %03o) and holds conversations", perm),
			"chmod 700 "+dir)
	}
	d.checkFreeSpace(f, dir)
	return f.result(CheckDataDir), usable
}

// checkFreeSpace adds a warning when the filesystem holding dir is short of
// space.
func (d *doctor) checkFreeSpace(f *finding, dir string) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		f.add(StatusWarn, fmt.Sprintf("cannot read free disk space: %v", err), "check the filesystem holding "+dir)
		return
	}
	free := uint64(st.Bavail) * uint64(st.Bsize)
	if free < d.opts.MinFreeBytes {
		f.add(StatusWarn, fmt.Sprintf("only %s free on its filesystem", humanBytes(free)),
			fmt.Sprintf("free disk space (at least %s) or move bot.data_dir to a larger filesystem; BoltDB cannot commit when the disk is full", humanBytes(d.opts.MinFreeBytes)))
		return
	}
	f.add(StatusOK, humanBytes(free)+" free", "")
}

// existingAncestor returns the nearest existing ancestor of p.
func existingAncestor(p string) (string, os.FileInfo, error) {
	for cur := filepath.Dir(p); ; cur = filepath.Dir(cur) {
		fi, err := os.Stat(cur)
		if err == nil {
			return cur, fi, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return cur, nil, err
		}
		if next := filepath.Dir(cur); next == cur {
			return cur, nil, err
		}
	}
}

const (
	wOK = 0x2
	xOK = 0x1
)

// accessible asks the kernel whether this user may access p with mode.
func accessible(p string, mode uint32) bool {
	return syscall.Access(p, mode) == nil
}

// probeWritable creates and removes a temporary file in dir.
func probeWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".switchboard-doctor-*")
	if err != nil {
		return err
	}
	name := f.Name()
	cerr := f.Close()
	rerr := os.Remove(name)
	return errors.Join(cerr, rerr)
}

func fileKind(fi os.FileInfo) string {
	switch m := fi.Mode(); {
	case m.IsRegular():
		return "regular file"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "non-directory"
}

// describeFSErr shortens *PathError to its cause (the path is already in the
// sentence).
func describeFSErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// ---- database ----

func (d *doctor) checkDatabase() Result {
	if d.cfg.Storage.Backend == "postgres" {
		return d.checkPostgres()
	}
	path := d.cfg.DBPath()
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Result{Name: CheckDatabase, Status: StatusOK, Finding: path + " does not exist yet; it will be created on first run"}
	}
	if err != nil {
		return Result{Name: CheckDatabase, Status: StatusFail,
			Finding: fmt.Sprintf("cannot inspect %s: %v", path, describeFSErr(err)),
			Fix:     fmt.Sprintf("give this user access to %s", path)}
	}
	if !fi.Mode().IsRegular() {
		return Result{Name: CheckDatabase, Status: StatusFail,
			Finding: fmt.Sprintf("%s is a %s, not a database file", path, fileKind(fi)),
			Fix:     fmt.Sprintf("move %s aside; switchboard creates a fresh database on start", path)}
	}
	st, err := bolt.Open(path, memory.Options{Timeout: d.opts.LockTimeout, Logger: d.log})
	switch {
	case errors.Is(err, memory.ErrInUse):
		return Result{Name: CheckDatabase, Status: StatusWarn,
			Finding: fmt.Sprintf("%s is locked by a running switchboard (the daemon is running); integrity check skipped", path),
			Fix:     "stop the daemon and run `switchboard doctor` again to check the database"}
	case errors.Is(err, memory.ErrInvalidDatabase):
		return d.corruptResult(path, err)
	case errors.Is(err, fs.ErrPermission):
		return Result{Name: CheckDatabase, Status: StatusFail,
			Finding: fmt.Sprintf("%s cannot be opened for writing: permission denied", path),
			Fix:     fmt.Sprintf("chown $(id -un) %s && chmod 600 %s (or run switchboard as the file's owner)", path, path)}
	case err != nil:
		return Result{Name: CheckDatabase, Status: StatusFail,
			Finding: fmt.Sprintf("cannot open %s: %v", path, err),
			Fix:     fmt.Sprintf("if the file is damaged, stop switchboard and move it aside (mv %s %s.broken) or restore a backup", path, path)}
	}
	defer func() { _ = st.Close() }()
	if err := st.Check(); err != nil {
		return d.corruptResult(path, err)
	}
	f := &finding{}
	f.add(StatusOK, fmt.Sprintf("%s is consistent (%s)", path, humanBytes(uint64(fi.Size()))), "")
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		f.add(StatusWarn, fmt.Sprintf("the file is accessible to group/others (mode %03o) and holds conversations", perm), "chmod 600 "+path)
	}
	return f.result(CheckDatabase)
}

// checkPostgres connects to storage.postgres.url, which also applies pending
// migrations, and runs the store's Check. The URL is never shown (Path()
// hides the password, and so do the store's errors).
func (d *doctor) checkPostgres() Result {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, d.cfg.Storage.Postgres.URL.Value(), memory.Options{Logger: d.log})
	if err != nil {
		return Result{Name: CheckDatabase, Status: StatusFail,
			Finding: fmt.Sprintf("cannot open the PostgreSQL store: %v", err),
			Fix:     "check storage.postgres.url (${DATABASE_URL}), that the server is up and the role may connect"}
	}
	defer func() { _ = st.Close() }()
	if err := st.Check(); err != nil {
		return Result{Name: CheckDatabase, Status: StatusFail, Finding: fmt.Sprintf("%s is inconsistent", st.Path()),
			Fix: "restore a backup, or copy a good installation again with `switchboard storage migrate`", Details: errorLines(err)}
	}
	return Result{Name: CheckDatabase, Status: StatusOK, Finding: st.Path() + " is consistent"}
}

func (d *doctor) corruptResult(path string, err error) Result {
	var ce *bolt.CorruptError
	if errors.As(err, &ce) { // from Open: list the problems, not Open's summary
		err = ce.Detail
	}
	details := errorLines(err)
	if len(details) > 10 {
		details = append(details[:10], fmt.Sprintf("… and %d more", len(details)-10))
	}
	return Result{Name: CheckDatabase, Status: StatusFail,
		Finding: fmt.Sprintf("%s is damaged or not a switchboard database", path),
		Fix:     bolt.FixCorrupt(path, d.opts.Now()), // the same fix `run` refuses to start with
		Details: details}
}

// ---- webhooks and server ----

// checkWebhooks gathers the webhook findings of every enabled platform in
// a webhook mode (platform.Descriptor.WebhookDoctor), in registry order.
func (d *doctor) checkWebhooks() Result {
	f := &finding{}
	env := platform.Env{Listen: d.cfg.Server.Listen}
	used := false
	for _, p := range d.cfg.Platforms().All() {
		sec := d.cfg.Channels[p.Name]
		if sec == nil || !sec.IsEnabled() || p.WebhookMode == nil {
			continue
		}
		mode := p.WebhookMode(sec)
		if mode == "" {
			continue
		}
		used = true
		if p.WebhookDoctor == nil {
			f.add(StatusOK, mode+" (no webhook checks)", "")
			continue
		}
		for _, r := range p.WebhookDoctor(sec, env) {
			f.add(Status(r.Status), r.Finding, r.Fix)
		}
	}
	if !used {
		f.add(StatusOK, "no channel uses webhooks", "")
	}
	return f.result(CheckWebhooks)
}

func (d *doctor) checkServer() Result {
	listen := d.cfg.Server.Listen
	if listen == "" {
		return Result{Name: CheckServer, Status: StatusOK, Finding: "no HTTP listener (server.listen is empty)"}
	}
	if netaddr.IsLoopback(listen) {
		return Result{Name: CheckServer, Status: StatusOK, Finding: listen + " is loopback only"}
	}
	if !d.cfg.Server.AdminToken.IsSet() {
		return Result{Name: CheckServer, Status: StatusWarn,
			Finding: listen + " accepts connections from other hosts and server.admin_token is empty: admin endpoints are refused to everyone, and /metrics is public",
			Fix:     "set server.admin_token (e.g. admin_token: ${SWITCHBOARD_ADMIN_TOKEN}) or listen on 127.0.0.1 behind a reverse proxy"}
	}
	return Result{Name: CheckServer, Status: StatusOK, Finding: listen + " is reachable from other hosts; admin endpoints need server.admin_token"}
}

// ---- personas ----

func (d *doctor) checkPersonas() Result {
	dir := d.cfg.ResolvePath(d.cfg.Personas.Dir)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Result{Name: CheckPersonas, Status: StatusWarn,
			Finding: dir + " does not exist: the built-in personas (assistant, reporter, buddy) will be written there on first run",
			Fix:     "nothing to do if that is what you want; otherwise create " + dir + " with your persona *.md files or set personas.dir"}
	case err != nil:
		return Result{Name: CheckPersonas, Status: StatusFail,
			Finding: fmt.Sprintf("cannot inspect %s: %v", dir, describeFSErr(err)),
			Fix:     "give this user read access to " + dir}
	case !fi.IsDir():
		return Result{Name: CheckPersonas, Status: StatusFail,
			Finding: fmt.Sprintf("%s is a %s, not a directory", dir, fileKind(fi)),
			Fix:     "set personas.dir to a directory of persona *.md files, or move " + dir + " aside"}
	}
	set, errs := personas.Load(dir)
	f := &finding{}
	if set.Len() == 0 && len(errs) == 0 {
		f.add(StatusWarn, dir+" holds no persona files: the built-in personas will be written there on first run",
			"nothing to do if that is what you want; otherwise add persona *.md files")
		return f.result(CheckPersonas)
	}
	f.add(StatusOK, fmt.Sprintf("%s: %d %s (%s)", dir, set.Len(), plural(set.Len(), "persona", "personas"), strings.Join(set.Names(), ", ")), "")
	if len(errs) > 0 {
		f.add(StatusWarn, fmt.Sprintf("%d %s could not be loaded and will be skipped", len(errs), plural(len(errs), "file", "files")),
			"fix the files at the lines shown")
		for _, e := range errs {
			f.details = append(f.details, e.Error())
		}
	}
	p := d.cfg.Personas
	if missing := set.CheckRules(p.ByTarget, p.ByChannel, p.Default); len(missing) > 0 {
		f.add(StatusWarn, fmt.Sprintf("%d persona %s in the config %s no file", len(missing), plural(len(missing), "name", "names"), plural(len(missing), "has", "have")),
			"create the missing persona files or change personas.default / by_target / by_channel")
		for _, e := range missing {
			// A name from a ${VAR} shows as the reference (config.Scrub).
			f.details = append(f.details, d.cfg.Scrub(e.Error()))
		}
	}
	return f.result(CheckPersonas)
}
