package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/platform"
	"github.com/switchboard-bot/switchboard/heartbeat/schedule"
)

var (
	nameRe = regexp.MustCompile(`^[a-z0-9_-]+$`)
)

// validator collects semantic errors.
type validator struct {
	c    *Config
	file string
	now  time.Time // for the jobs[].at horizon (a valid at stays valid as time passes)
	errs []error
}

func (v *validator) fail(key, format string, args ...any) {
	v.errs = append(v.errs, &Error{
		File: v.file, Line: v.c.src.line(key), Key: key,
		Msg: joinMsg(key, v.c.scrubKey(key, fmt.Sprintf(format, args...))),
	})
}

// joinMsg puts the key in front of msg: "k is empty: …" or "k: must be …".
func joinMsg(key, msg string) string {
	if strings.HasPrefix(msg, "is ") || strings.HasPrefix(msg, "needs ") {
		return key + " " + msg
	}
	return key + ": " + msg
}

// Validate checks the configuration's meaning: durations, time zones, cron
// specs, addresses, names, enums, bounds (a job's one-shot at at most
// schedule.MaxOneShotYears after now) and the secrets an enabled channel
// needs. All problems are returned joined; each names file:line (where the
// key was written in the file) and the key path. Messages never contain a
// secret's value.
func (c *Config) Validate() error {
	v := &validator{c: c, file: displayName(c.Path), now: time.Now()}
	v.bot()
	v.llm()
	v.agent()
	v.personas()
	v.access()
	v.channels()
	v.heartbeat()
	v.jobs()
	v.server()
	v.logAndRetention()
	v.mcp()
	return errors.Join(v.errs...)
}

func (v *validator) nonEmpty(key, val string) {
	if strings.TrimSpace(val) == "" {
		v.fail(key, "must not be empty")
	}
}

func (v *validator) positive(key string, n int) {
	if n <= 0 {
		v.fail(key, "must be a positive integer, got %d", n)
	}
}

func (v *validator) nonNegative(key string, n int) {
	if n < 0 {
		v.fail(key, "must be 0 or more, got %d", n)
	}
}

func (v *validator) positiveDur(key string, d time.Duration) {
	if d <= 0 {
		v.fail(key, "must be a positive duration (e.g. 30s, 5m), got %s", FormatDuration(d))
	}
}

func (v *validator) nonNegativeDur(key string, d time.Duration) {
	if d < 0 {
		v.fail(key, "must not be negative, got %s", FormatDuration(d))
	}
}

func (v *validator) oneOf(key, val string, allowed ...string) {
	if !slices.Contains(allowed, val) {
		v.fail(key, "must be one of %s, got %q", strings.Join(allowed, " | "), truncate(val, 60))
	}
}

func (v *validator) timezone(key, tz string) {
	if err := CheckTimezone(tz); err != nil {
		v.fail(key, "%v", err)
	}
}

func (v *validator) httpURL(key, raw string) {
	if raw == "" {
		return
	}
	if err := checkURL(raw, "http", "https"); err != nil {
		v.fail(key, "%v", err)
	}
}

func (v *validator) persona(key, name string) {
	if !nameRe.MatchString(name) {
		v.fail(key, "persona name %q must use only a-z, 0-9, _ and -", truncate(name, 60))
	}
}

func (v *validator) targets(key string, list []string) {
	for i, t := range list {
		if err := v.c.Platforms().CheckTarget(t); err != nil {
			v.fail(fmt.Sprintf("%s[%d]", key, i), "%v", err)
		}
	}
}

// principals checks entries that may be user ids or targets.
func (v *validator) principals(key string, list []string) {
	reg := v.c.Platforms()
	for i, p := range list {
		uerr, terr := reg.CheckUserID(p), reg.CheckTarget(p)
		switch {
		case uerr == nil || terr == nil:
		case channels.CheckUserID(p, reg.Names()) == nil: // a user id the platform would not write
			v.fail(fmt.Sprintf("%s[%d]", key, i), "%v", uerr)
		case channels.CheckTarget(p, reg.Names()) == nil: // a target the platform would not write
			v.fail(fmt.Sprintf("%s[%d]", key, i), "%v", terr)
		default:
			v.fail(fmt.Sprintf("%s[%d]", key, i), "%q is neither a user id (\"telegram:user:42\") nor a target (\"telegram:12345\")", truncate(p, 60))
		}
	}
}

// required reports an empty secret (or value) an enabled feature needs,
// naming the environment variable to set.
func (v *validator) required(key string, set bool, because string) {
	if set {
		return
	}
	env := envDefaultFor(v.c.Platforms(), key)
	leaf := key[strings.LastIndexByte(key, '.')+1:]
	var hint string
	switch refs := v.c.src.refsOf(key); {
	case len(refs) > 0:
		hint = "set " + strings.Join(refs, " or ")
	case v.c.src == nil && env != "":
		hint = "set " + env
	case env != "":
		hint = "give it a value, e.g. " + leaf + ": ${" + env + "}"
	default:
		hint = "give it a value"
	}
	v.fail(key, "is empty: %s (%s)", hint, because)
}

func (s *sourceMap) refsOf(key string) []string {
	if s == nil {
		return nil
	}
	return s.refs[key]
}

func envDefaultFor(reg *platform.Registry, key string) string {
	for _, e := range envDefaultsOf(reg) {
		if e.key == key {
			return e.env
		}
	}
	return ""
}

func (v *validator) bot() {
	b := v.c.Bot
	v.nonEmpty("bot.name", b.Name)
	v.nonEmpty("bot.data_dir", b.DataDir)
	v.timezone("bot.timezone", b.Timezone)
	v.principals("bot.admins", b.Admins)
}

// minResponseChars is the least llm.max_response_chars: a smaller bound
// would cut ordinary answers.
const minResponseChars = 1000

func (v *validator) llm() {
	l := v.c.LLM
	v.httpURL("llm.base_url", l.BaseURL)
	v.nonEmpty("llm.model", l.Model)
	if l.Temperature < 0 || l.Temperature > 2 {
		v.fail("llm.temperature", "must be between 0 and 2, got %g", l.Temperature)
	}
	v.positive("llm.max_tokens", l.MaxTokens)
	v.positiveDur("llm.timeout", l.Timeout)
	v.nonNegative("llm.max_retries", l.MaxRetries)
	v.oneOf("llm.tool_protocol", l.ToolProtocol, "native", "json", "auto")
	if l.MaxResponseChars < minResponseChars {
		v.fail("llm.max_response_chars", "must be at least %d, got %d", minResponseChars, l.MaxResponseChars)
	}
	v.fallbacks()
	v.budget()
	v.workspace()
	v.exec()
	v.media()
}

func (v *validator) agent() {
	a := v.c.Agent
	v.positive("agent.max_iterations", a.MaxIterations)
	v.positive("agent.max_tool_calls", a.MaxToolCalls)
	v.nonNegative("agent.tool_retries", a.ToolRetries)
	v.nonNegativeDur("agent.tool_retry_delay", a.ToolRetryDelay)
	v.positiveDur("agent.tool_timeout", a.ToolTimeout)
	v.positive("agent.observation_max_len", a.ObservationMaxLen)
	v.positive("agent.max_history", a.MaxHistory)
	v.nonNegative("agent.token_budget", a.TokenBudget)
	v.positive("agent.max_concurrent_turns", a.MaxConcurrentTurns)
	v.positiveDur("agent.turn_timeout", a.TurnTimeout)
	v.positive("agent.max_message_chars", a.MaxMessageChars)
	v.positive("agent.max_turn_chars", a.MaxTurnChars)
	v.positive("agent.max_answer_chunks", a.MaxAnswerChunks)
	v.positiveDur("agent.approval_timeout", a.ApprovalTimeout)
	v.toolGlobs("agent.require_approval", a.RequireApproval)
	seen := map[string]bool{}
	for i, t := range a.Tools {
		key := fmt.Sprintf("agent.tools[%d]", i)
		if !nameRe.MatchString(t) && !isGlob(t) && !strings.Contains(t, MCPToolSep) {
			v.fail(key, "tool name %q must use only a-z, 0-9, _ and - (or be a glob such as github__*)", truncate(t, 60))
		} else if seen[t] {
			v.fail(key, "tool %q is listed twice", t)
		}
		seen[t] = true
	}
	v.tools("agent.tools", a.Tools)
	for i, d := range a.WebFetch.AllowDomains {
		if d == "" || strings.ContainsAny(d, "/:@ \t") {
			v.fail(fmt.Sprintf("agent.web_fetch.allow_domains[%d]", i), "%q must be a bare host name such as example.com (no scheme, port or path)", truncate(d, 60))
		}
	}
	v.positive("agent.web_fetch.max_bytes", a.WebFetch.MaxBytes)
	v.webSearch(a)
}

// webSearch checks agent.web_search; provider, url and key are required
// only when agent.tools enables web_search.
func (v *validator) webSearch(a Agent) {
	ws := a.WebSearch
	if !slices.Contains([]string{"", "brave", "searxng"}, ws.Provider) {
		v.fail("agent.web_search.provider", "must be brave or searxng (or empty when web_search is not used), got %q", truncate(ws.Provider, 60))
	}
	v.httpURL("agent.web_search.url", ws.URL)
	if ws.MaxResults < 1 || ws.MaxResults > 20 {
		v.fail("agent.web_search.max_results", "must be between 1 and 20, got %d", ws.MaxResults)
	}
	if !slices.Contains(a.Tools, "web_search") {
		return
	}
	switch ws.Provider {
	case "":
		v.fail("agent.web_search.provider", "is empty but agent.tools enables web_search: set brave or searxng")
	case "brave":
		if ws.APIKey.Value() == "" {
			v.fail("agent.web_search.api_key", "is empty but web_search uses brave: set BRAVE_API_KEY (or agent.web_search.api_key)")
		}
	case "searxng":
		if ws.URL == "" {
			v.fail("agent.web_search.url", "is empty but web_search uses searxng: set the instance's URL, e.g. http://127.0.0.1:8888")
		}
	}
}

func (v *validator) personas() {
	p := v.c.Personas
	v.nonEmpty("personas.dir", p.Dir)
	v.nonEmpty("skills.dir", v.c.Skills.Dir)
	v.persona("personas.default", p.Default)
	for _, t := range sortedKeys(p.ByTarget) {
		key := "personas.by_target." + t
		if err := v.c.Platforms().CheckTarget(t); err != nil {
			v.fail(key, "%v", err)
		}
		v.persona(key, p.ByTarget[t])
	}
	for _, ch := range sortedKeys(p.ByChannel) {
		key := "personas.by_channel." + ch
		if names := v.c.Platforms().Names(); !slices.Contains(names, ch) {
			v.fail(key, "unknown channel %q (one of %s)", truncate(ch, 60), strings.Join(names, ", "))
		}
		v.persona(key, p.ByChannel[ch])
	}
}

func (v *validator) access() {
	a := v.c.Access
	v.oneOf("access.mode", a.Mode, "open", "allowlist", "pairing")
	v.principals("access.allow_from", a.AllowFrom)
	v.oneOf("access.groups", a.Groups, "mention", "all", "off")
}

// channels validates every platform's section with its descriptor's
// Validate; the problems' keys are placed under channels.<name>.
func (v *validator) channels() {
	env := platform.Env{Listen: v.c.Server.Listen}
	for _, d := range v.c.Platforms().All() {
		sec, ok := v.c.Channels[d.Name]
		if !ok || sec == nil || d.Validate == nil {
			continue
		}
		c := &platform.Checker{RedactURL: redactURL}
		d.Validate(sec, env, c)
		for _, p := range c.Problems {
			key := p.Key
			if !p.Global {
				key = "channels." + d.Name + "." + p.Key
			}
			if p.Because != "" {
				v.required(key, false, p.Because)
				continue
			}
			v.fail(key, "%s", p.Msg)
		}
	}
}

func (v *validator) heartbeat() {
	h := v.c.Heartbeat
	if h.Schedule == "" {
		if h.Enabled {
			v.fail("heartbeat.schedule", "is empty: heartbeat is enabled")
		}
	} else if _, err := schedule.Parse(h.Schedule, time.UTC); err != nil {
		v.fail("heartbeat.schedule", "%v", err)
	}
	if h.ActiveHours != "" {
		if _, _, err := schedule.ParseActiveHours(h.ActiveHours); err != nil {
			v.fail("heartbeat.active_hours", "%v", err)
		}
	}
	v.nonNegativeDur("heartbeat.idle_after", h.IdleAfter)
	v.positive("heartbeat.max_per_day", h.MaxPerDay)
	v.targets("heartbeat.targets", h.Targets)
}

func (v *validator) jobs() {
	names := map[string]int{}
	for i, j := range v.c.Jobs {
		key := fmt.Sprintf("jobs[%d]", i)
		if j.Name == "" {
			v.fail(key+".name", "is empty: every job needs a name")
		} else if !nameRe.MatchString(j.Name) {
			v.fail(key+".name", "job name %q must use only a-z, 0-9, _ and -", truncate(j.Name, 60))
		} else if first, dup := names[j.Name]; dup {
			v.fail(key+".name", "job name %q is already used by jobs[%d]", j.Name, first)
		} else {
			names[j.Name] = i
		}
		switch {
		case j.Schedule == "" && j.At == "":
			v.fail(key, "needs schedule (cron) or at (one-shot time)")
		case j.Schedule != "" && j.At != "":
			v.fail(key+".at", "set either schedule or at, not both")
		case j.Schedule != "":
			if _, err := schedule.Parse(j.Schedule, time.UTC); err != nil {
				v.fail(key+".schedule", "%v", err)
			}
		default:
			if at, err := time.Parse(time.RFC3339, j.At); err != nil {
				v.fail(key+".at", "%q is not an RFC 3339 time such as 2025-01-31T09:00:00+01:00", truncate(j.At, 60))
			} else if err := schedule.CheckOneShot(at, v.now); err != nil {
				v.fail(key+".at", "%v", err)
			}
		}
		if j.Timezone != "" {
			v.timezone(key+".timezone", j.Timezone)
		}
		v.oneOf(key+".kind", j.Kind, "task", "reminder")
		switch j.Kind {
		case "task":
			if strings.TrimSpace(j.Prompt) == "" {
				v.fail(key+".prompt", "is empty: a task job needs a prompt")
			}
		case "reminder":
			if strings.TrimSpace(j.Text) == "" {
				v.fail(key+".text", "is empty: a reminder job needs text")
			}
		}
		if j.Persona != "" {
			v.persona(key+".persona", j.Persona)
		}
		if len(j.DeliverTo) == 0 {
			v.fail(key+".deliver_to", "is empty: list at least one target such as \"telegram:12345\"")
		}
		v.targets(key+".deliver_to", j.DeliverTo)
		v.oneOf(key+".misfire", j.Misfire, "skip", "run_once")
		v.nonNegativeDur(key+".grace", j.Grace)
		v.toolGlobs(key+".approve", j.Approve)
	}
}

func (v *validator) server() {
	if l := v.c.Server.Listen; l != "" {
		host, port, err := net.SplitHostPort(l)
		p, perr := strconv.Atoi(port)
		if err != nil || perr != nil || p < 0 || p > 65535 || strings.ContainsAny(host, " /") {
			v.fail("server.listen", "%q must be host:port such as 127.0.0.1:8787 or :8787", truncate(l, 60))
		}
	}
}

func (v *validator) logAndRetention() {
	v.oneOf("log.level", v.c.Log.Level, "debug", "info", "warn", "error")
	v.oneOf("log.format", v.c.Log.Format, "text", "json")
	r := v.c.Retention
	v.positiveDur("retention.dedup_ttl", r.DedupTTL)
	v.nonNegativeDur("retention.audit_max_age", r.AuditMaxAge)
	v.nonNegative("retention.audit_max_records", r.AuditMaxRecords)
	v.positive("retention.runs_per_job", r.RunsPerJob)
	v.storage()
	// Below a second, renewals (every lease_ttl/3) would hammer the
	// database and a slow query would cost the lease.
	if l := v.c.Cluster.LeaseTTL; l < time.Second {
		v.fail("cluster.lease_ttl", "%s is too short: at least 1s (default 15s)", l)
	}
	v.tasks()
}

// tasks checks the limits of background tasks (tasks:).
func (v *validator) tasks() {
	t := v.c.Tasks
	v.positive("tasks.max_per_chat", t.MaxPerChat)
	v.positive("tasks.max_running", t.MaxRunning)
	if t.MaxDuration < time.Second {
		v.fail("tasks.max_duration", "%s is too short: at least 1s (default 30m)", t.MaxDuration)
	}
}

// storage names the allowed backends; postgres needs its URL (never
// printed: it holds the password), whose user info must not hold an
// unencoded '@' (the driver would print the text after it as a host name).
func (v *validator) storage() {
	v.oneOf("storage.backend", v.c.Storage.Backend, "bolt", "postgres")
	if v.c.Storage.Backend != "postgres" {
		return
	}
	url := v.c.Storage.Postgres.URL
	v.required("storage.postgres.url", url.IsSet(), "storage.backend is postgres")
	if !url.IsSet() {
		return
	}
	scheme, rest, ok := strings.Cut(url.Value(), "://")
	switch {
	case ok && scheme != "postgres" && scheme != "postgresql":
		v.fail("storage.postgres.url", "must be a postgres:// or postgresql:// URL (or a key=value DSN), got scheme %q", truncate(scheme, 20))
	case !ok && !strings.Contains(url.Value(), "="):
		v.fail("storage.postgres.url", "must be a postgres:// URL or a key=value DSN such as \"host=db dbname=switchboard\"")
	case ok && strings.Count(urlAuthority(rest), "@") > 1:
		// The driver would take the text after the first '@' for the
		// host and print it in its errors: part of the password.
		v.fail("storage.postgres.url", "the user info holds an unencoded '@': percent-encode '@' in the password as %%40 (and in the user name), e.g. postgres://user:p%%40ss@host:5432/db")
	}
}

// urlAuthority is the authority of a URL given without its "scheme://":
// the text before the first '/', '?' or '#'.
func urlAuthority(rest string) string {
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		return rest[:i]
	}
	return rest
}

// CheckTimezone accepts "", "Local", "UTC" and IANA names.
func CheckTimezone(tz string) error {
	switch tz {
	case "", "Local", "UTC":
		return nil
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return fmt.Errorf("unknown time zone %q (use an IANA name such as Europe/Berlin, or Local or UTC)", truncate(tz, 60))
	}
	return nil
}

func checkURL(raw string, schemes ...string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || !slices.Contains(schemes, u.Scheme) {
		return fmt.Errorf("%q must be an absolute %s:// URL", truncate(redactURL(raw), 80), strings.Join(schemes, ":// or "))
	}
	return nil
}

// redactURL is RedactURL (kept for the validator's call sites).
func redactURL(raw string) string { return RedactURL(raw) }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
