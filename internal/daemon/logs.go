package daemon

// The daemon's log, kept in memory for the web console's Logs page
// (issue 34): every record the daemon's logger takes also goes to a bounded
// ring (internal/logring), scrubbed first of every secret the configuration
// in force holds and of credentials in URLs.

import (
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/logring"
	"github.com/switchboard-bot/switchboard/internal/redact"
)

// minScrubbed is the shortest secret value replaced in log text: shorter
// ones would wreck every line they occur in by chance ("on", "ab1") and
// protect nothing.
const minScrubbed = 4

// logTail is the ring of the daemon's last log records and its scrubber.
type logTail struct {
	ring  *logring.Ring
	first *config.Config
	d     atomic.Pointer[Daemon] // set once the daemon exists: its config in force

	mu     sync.Mutex
	forCfg *config.Config
	rep    *strings.Replacer
}

// newLogTail makes o.Logger write to a new ring too; the ring's text is
// scrubbed with cfg until attach hands it the daemon (then with the config
// in force, which a reload swaps).
func newLogTail(o *Options, cfg *config.Config) *logTail {
	t := &logTail{ring: logring.New(logring.Options{}), first: cfg}
	t.ring.SetRedact(t.scrub)
	o.Logger = slog.New(t.ring.Handler(o.Logger.Handler()))
	return t
}

// attach makes the scrubber follow d's config.
func (t *logTail) attach(d *Daemon) { t.d.Store(d) }

func (t *logTail) config() *config.Config {
	if d := t.d.Load(); d != nil {
		return d.config()
	}
	return t.first
}

// scrub is text without the secrets of the config in force — every Secret
// value, from ${ENV} or written in plain text, as is and as a quoted log
// value shows it, and a database URL's password pieces — and with URLs'
// credentials redacted. The replacer is built once per config (a record
// costs one pass), which is why config.Scrub (built per call) is not used.
func (t *logTail) scrub(text string) string {
	return redact.Text(t.replacer(t.config()).Replace(text))
}

// replacer is cfg's secret replacer, built once per config.
func (t *logTail) replacer(cfg *config.Config) *strings.Replacer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rep != nil && t.forCfg == cfg {
		return t.rep
	}
	t.forCfg, t.rep = cfg, strings.NewReplacer(secretForms(cfg)...)
	return t.rep
}

// secretForms is the old/new pairs that hide cfg's secrets, longest first.
func secretForms(cfg *config.Config) []string {
	var forms []string
	seen := map[string]bool{}
	add := func(s string) {
		if len(s) < minScrubbed || seen[s] {
			return
		}
		seen[s] = true
		forms = append(forms, s)
	}
	for _, v := range cfg.SecretValues() {
		add(v)
		if q := strconv.Quote(v); q[1:len(q)-1] != v {
			add(q[1 : len(q)-1]) // as a quoted log value shows it
		}
		for _, p := range redact.Passwords(v) {
			add(p)
		}
	}
	// Longest first: a secret that contains another is replaced whole.
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, "[redacted]")
	}
	return pairs
}

// LogTail returns up to n of the last log records at or above level,
// oldest first, scrubbed (again) with the config in force.
func (d *Daemon) LogTail(level slog.Level, n int) []logring.Record {
	if d.logs == nil {
		return nil
	}
	recs := d.logs.ring.Tail(level, n)
	for i := range recs {
		recs[i].Text = d.logs.scrub(recs[i].Text)
	}
	return recs
}

// LogChanged is closed when the next log record arrives.
func (d *Daemon) LogChanged() <-chan struct{} {
	if d.logs == nil {
		return nil
	}
	return d.logs.ring.Changed()
}

// Logger is the daemon's logger: what it takes reaches the log and the
// console's Logs page.
func (d *Daemon) Logger() *slog.Logger { return d.log }
