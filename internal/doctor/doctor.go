// Package doctor owns `switchboard doctor`: a read-mostly health check of an
// installation that tells the operator, check by check, what works, what
// does not and the exact change that fixes it.
//
// Checks, in report order: config (internal/config, file:line errors), data
// dir (exists or can be created, directory, writable, not world-writable,
// not readable by others, free space), database (memory.Open with a short
// lock timeout + Store.Check), model endpoint (one GET <base_url>/models
// through go-openai), the checks of every enabled chat platform in registry
// order (each platform's descriptor brings its own, platform.Descriptor.Doctor:
// Telegram getMe, Discord GET /users/@me, Slack auth.test +
// apps.connections.open in socket mode, each through the platform's real
// client library), webhooks (the findings of each platform in a webhook
// mode, Descriptor.WebhookDoctor: Telegram's webhook URL/secret, Slack's
// signing secret), server (non-loopback listener without an admin token)
// and personas (directory, parseable files, names the selection rules
// reference), then exec sandbox when agent.tools enables exec (a real
// sandbox runs true, exec.go). Doctor names no platform: it iterates the
// registry.
//
// Design decisions:
//
//   - A check yields one Result: ok, warn or fail with a one-line finding and,
//     for anything not ok, a concrete fix; multi-line material (config errors,
//     persona parse errors) goes in Details. Checks that cannot run because
//     something they depend on failed are reported as "skip" (not broken), so
//     the report always lists every check and says why one did not run.
//   - Only fail makes the run broken; warn is advice. The command's exit code
//     is the lead's business: Run returns broken.
//   - Doctor changes nothing it does not own: it does not create the data or
//     personas directory and does not write persona defaults. Two unavoidable
//     touches: the writability probe creates and removes one temporary file in
//     the data dir, and memory.Open on an existing database takes the file
//     lock (which is how a running daemon is detected) and verifies the
//     schema buckets. A missing database file is not created.
//   - Network checks run concurrently, each with its own Options.Timeout, over
//     the injected *http.Client; the config's base_url/api_url fields decide
//     where requests go (this is also how tests reach the fakes). Slack's
//     apps.connections.open issues a WebSocket URL that is never dialed.
//   - Secrets never reach the report: findings are built from status codes
//     and error classes rather than server text where a server could echo a
//     credential, and as a last line of defence every secret of the config
//     and every value of the credential environment variables is replaced by
//     "[redacted]" in every finding, fix and detail before printing.
//   - A missing config file is ok (the defaults make it optional, DESIGN §4),
//     but the finding says the defaults are in use, so a mistyped --config is
//     visible.
package doctor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/platform"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/platforms"
)

// Status is the outcome of one check.
type Status string

// Statuses. Only StatusFail makes a run broken.
const (
	StatusOK   Status = "ok"
	StatusWarn Status = "warn"
	StatusFail Status = "fail"
	// StatusSkip marks a check that did not run because something it needs
	// failed (the finding says what).
	StatusSkip Status = "skip"
)

// Check names, in report order.
const (
	CheckConfig   = "config"
	CheckDataDir  = "data dir"
	CheckDatabase = "database"
	CheckModel    = "model endpoint"
	CheckChannels = "channels" // reported only when no chat platform is enabled
	CheckWebhooks = "webhooks"
	CheckServer   = "server"
	CheckPersonas = "personas"
)

// Defaults for Options.
const (
	DefaultTimeout      = 5 * time.Second
	DefaultMinFreeBytes = 100 << 20
	// maxLockWait bounds the wait for the database lock.
	maxLockWait = time.Second
)

// Options configure Run. The zero value checks ./config.yaml with the
// process environment and a 5 s per-check timeout.
type Options struct {
	// ConfigPath is the config file ("" = "config.yaml").
	ConfigPath string
	// HTTPClient makes every network request (nil: a new http.Client with the
	// default transport). Its Transport is reused, never modified.
	HTTPClient *http.Client
	// Timeout bounds each check's network requests (default 5s).
	Timeout time.Duration
	// Now stamps the report header (default time.Now).
	Now func() time.Time
	// LookupEnv resolves ${VAR} in the config (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// LockTimeout bounds the wait for the database lock, which a running
	// daemon holds (default: Timeout, at most 1s).
	LockTimeout time.Duration
	// MinFreeBytes is the free space under which the data dir check warns
	// (default 100 MiB).
	MinFreeBytes uint64
	// Bwrap is the bubblewrap binary the exec check tries ("" = bwrap on
	// PATH, then /usr/bin/bwrap); tests point it at a missing one.
	Bwrap string
	// Logger receives debug logs (nil: discard). Never secrets.
	Logger *slog.Logger
	// Platforms are the chat platforms the config may enable (nil: the
	// built-ins, internal/platforms.Builtin).
	Platforms *platform.Registry
}

// Result is one check's outcome.
type Result struct {
	Name    string   `json:"name"`
	Status  Status   `json:"status"`
	Finding string   `json:"finding"`
	Fix     string   `json:"fix,omitempty"`
	Details []string `json:"details,omitempty"`
}

// credentialEnv are the environment variables whose values are scrubbed from
// the report even when the config does not reference them: these, and every
// platform's (credentialEnvOf).
var credentialEnv = []string{"OPENAI_API_KEY", "SWITCHBOARD_ADMIN_TOKEN"}

// credentialEnvOf adds the platforms' credential variables: those their
// sections default to (EnvDefaults) and the others they name (CredentialEnv).
func credentialEnvOf(reg *platform.Registry) []string {
	out := slices.Clone(credentialEnv)
	for _, p := range reg.All() {
		for _, e := range p.EnvDefaults {
			out = append(out, e.Env)
		}
		out = append(out, p.CredentialEnv...)
	}
	return out
}

// Run performs every check, writes the report to w and returns the results
// and whether anything failed. Errors writing to w are ignored (the results
// are returned either way).
func Run(ctx context.Context, opts Options, w io.Writer) (results []Result, broken bool) {
	opts = opts.withDefaults()
	results = Check(ctx, opts)
	_ = WriteReport(w, opts.ConfigPath, opts.Now(), results)
	return results, Broken(results)
}

// Broken reports whether any result failed.
func Broken(results []Result) bool {
	for _, r := range results {
		if r.Status == StatusFail {
			return true
		}
	}
	return false
}

func (o Options) withDefaults() Options {
	if o.ConfigPath == "" {
		o.ConfigPath = "config.yaml"
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = min(o.Timeout, maxLockWait)
	}
	if o.MinFreeBytes == 0 {
		o.MinFreeBytes = DefaultMinFreeBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// doctor carries one run's state.
type doctor struct {
	opts Options
	cfg  *config.Config
	log  *slog.Logger
}

// Check performs every check and returns the results in report order,
// secrets scrubbed. It writes nothing.
func Check(ctx context.Context, opts Options) []Result {
	opts = opts.withDefaults()
	d := &doctor{opts: opts, log: opts.Logger}

	cfgRes, cfg := d.checkConfig()
	results := []Result{cfgRes}
	if cfg == nil {
		for _, name := range []string{CheckDataDir, CheckDatabase, CheckModel, CheckChannels, CheckWebhooks, CheckServer, CheckPersonas} {
			results = append(results, Result{Name: name, Status: StatusSkip, Finding: "not checked: needs a valid config"})
		}
		return d.scrub(results)
	}
	d.cfg = cfg

	dataRes, dataUsable := d.checkDataDir()
	results = append(results, dataRes)
	if dataUsable {
		results = append(results, d.checkDatabase())
	} else {
		results = append(results, Result{Name: CheckDatabase, Status: StatusSkip, Finding: "not checked: the data dir is not usable"})
	}

	// Network checks run concurrently; each owns its goroutine until it
	// returns, and Check waits for all of them.
	checks := []netCheck{{CheckModel, d.checkModel}}
	checks = append(checks, d.platformChecks()...) // the enabled platforms' own (platforms.go)
	if len(cfg.MCP.Servers) > 0 {
		checks = append(checks, netCheck{CheckMCP, d.checkMCP})
	}
	netResults := make([]Result, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, opts.Timeout)
			defer cancel()
			netResults[i] = c.run(cctx)
			netResults[i].Name = c.name
		}()
	}
	wg.Wait()
	results = append(results, netResults...)
	if len(checks) == 1 || len(checks) == 2 && len(cfg.MCP.Servers) > 0 {
		results = append(results, Result{Name: CheckChannels, Status: StatusOK,
			Finding: "no chat platform enabled (" + consoleNote(cfg) + ")"})
	}

	results = append(results, d.checkWebhooks(), d.checkServer(), d.checkPersonas())
	if d.execEnabled() { // exec.go
		results = append(results, d.checkExec(ctx))
	}
	return d.scrub(results)
}

func consoleNote(cfg *config.Config) string {
	if cfg.Channels.Enabled(console.Name) {
		return "console only"
	}
	return "the console is disabled too: nobody can talk to the bot"
}

// scrub replaces every known secret value in the results.
func (d *doctor) scrub(results []Result) []Result {
	var secrets []string
	reg := d.opts.Platforms
	if d.cfg != nil {
		reg = d.cfg.Platforms()
	}
	if reg == nil {
		reg = platforms.Builtin
	}
	for _, name := range credentialEnvOf(reg) {
		if v, ok := d.opts.LookupEnv(name); ok {
			secrets = append(secrets, v)
		}
	}
	if c := d.cfg; c != nil {
		for _, s := range []config.Secret{c.LLM.APIKey, c.Server.AdminToken} {
			secrets = append(secrets, s.Value())
		}
		for _, f := range c.LLM.Fallbacks {
			secrets = append(secrets, f.APIKey.Value())
		}
		for _, sec := range c.Channels { // every platform's secrets
			for _, s := range platform.SecretsOf(sec) {
				secrets = append(secrets, s.Value())
			}
		}
	}
	secrets = usableSecrets(secrets)
	if len(secrets) == 0 {
		return results
	}
	rep := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		rep = append(rep, s, "[redacted]")
	}
	r := strings.NewReplacer(rep...)
	for i := range results {
		results[i].Finding = r.Replace(results[i].Finding)
		results[i].Fix = r.Replace(results[i].Fix)
		for j := range results[i].Details {
			results[i].Details[j] = r.Replace(results[i].Details[j])
		}
	}
	return results
}

// usableSecrets drops empty and trivially short values (replacing "1"
// everywhere would wreck the report without protecting anything) and sorts
// longest first so a secret containing another is replaced whole.
func usableSecrets(in []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range in {
		s = strings.TrimSpace(s)
		if len(s) < 4 || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// WriteReport prints results as a readable report.
func WriteReport(w io.Writer, configPath string, now time.Time, results []Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "switchboard doctor: %s (%s)\n\n", configPath, now.Format("2006-01-02 15:04:05 MST"))
	width := 0
	for _, r := range results {
		width = max(width, len(r.Name))
	}
	var ok, warn, fail, skip int
	for _, r := range results {
		label := strings.ToUpper(string(r.Status))
		fmt.Fprintf(&b, "  %-4s  %-*s  %s\n", label, width, r.Name, r.Finding)
		indent := strings.Repeat(" ", 2+4+2+width+2)
		for _, dl := range r.Details {
			fmt.Fprintf(&b, "%s%s\n", indent, dl)
		}
		if r.Fix != "" && r.Status != StatusOK {
			fmt.Fprintf(&b, "%sfix: %s\n", indent, r.Fix)
		}
		switch r.Status {
		case StatusOK:
			ok++
		case StatusWarn:
			warn++
		case StatusFail:
			fail++
		default:
			skip++
		}
	}
	fmt.Fprintf(&b, "\n%d ok, %d %s, %d %s", ok, warn, plural(warn, "warning", "warnings"), fail, plural(fail, "failure", "failures"))
	if skip > 0 {
		fmt.Fprintf(&b, ", %d skipped", skip)
	}
	switch {
	case fail > 0:
		b.WriteString(": switchboard will not work correctly until the failures are fixed.\n")
	case warn > 0:
		b.WriteString(": switchboard can run; the warnings deserve a look.\n")
	default:
		b.WriteString(": all good.\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// finding accumulates several observations of one check into one Result:
// the worst status wins, findings and fixes are joined in order.
type finding struct {
	status   Status
	findings []string
	fixes    []string
	details  []string
}

func (f *finding) add(s Status, what, fix string) {
	if rank(s) > rank(f.status) {
		f.status = s
	}
	if what != "" {
		f.findings = append(f.findings, what)
	}
	if fix != "" && s != StatusOK {
		f.fixes = append(f.fixes, fix)
	}
}

func rank(s Status) int { return platform.StatusRank(string(s)) }

func (f *finding) result(name string) Result {
	st := f.status
	if st == "" {
		st = StatusOK
	}
	return Result{Name: name, Status: st, Finding: strings.Join(f.findings, "; "),
		Fix: strings.Join(f.fixes, "; "), Details: f.details}
}
