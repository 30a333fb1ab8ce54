package heartbeat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/memory"
)

// Job kinds, misfire policies, sources.
const (
	KindTask     = "task"
	KindReminder = "reminder"

	MisfireSkip    = "skip"
	MisfireRunOnce = "run_once"

	SourceConfig = "config" // defined in config.yaml
	SourceChat   = "chat"   // created at runtime with the schedule tool
)

// Run and delivery statuses (memory.JobRun.Status, memory.DeliveryStatus.Status).
const (
	RunRunning = "running"
	RunOK      = "ok"
	RunPartial = "partial" // some deliveries failed
	RunFailed  = "failed"  // execution failed or nothing was delivered
	RunSkipped = "skipped" // missed while the daemon was down (misfire skip)

	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
	DeliverySkipped   = "skipped" // nothing to deliver (a status token answer)
)

// JobSpec is a job as stored (memory.JobRecord.Spec) and as config jobs are
// converted to.
type JobSpec struct {
	Name      string        `json:"name"`
	Kind      string        `json:"kind"`
	Schedule  string        `json:"schedule,omitempty"` // cron spec or @every (xor At)
	At        time.Time     `json:"at,omitzero"`        // one-shot time
	Timezone  string        `json:"timezone,omitempty"` // "" = bot timezone
	Persona   string        `json:"persona,omitempty"`
	Prompt    string        `json:"prompt,omitempty"` // task
	Text      string        `json:"text,omitempty"`   // reminder
	DeliverTo []string      `json:"deliver_to"`
	Misfire   string        `json:"misfire,omitempty"` // skip (default) | run_once
	Grace     time.Duration `json:"grace,omitempty"`   // 0 = DefaultGrace
	// Tools restricts a task's tools (nil = the persona's tools).
	Tools []string `json:"tools,omitempty"`
	// CreatedBy is the session key of the chat that created the job ("" for config jobs).
	CreatedBy string `json:"created_by,omitempty"`
}

// OneShot reports whether the job runs once, at At.
func (s JobSpec) OneShot() bool { return !s.At.IsZero() }

func (s JobSpec) grace() time.Duration {
	if s.Grace <= 0 {
		return DefaultGrace
	}
	return s.Grace
}

// When describes the schedule for people ("cron 0 9 * * * (Asia/Shanghai)").
func (s JobSpec) When() string {
	tz := s.Timezone
	if tz == "" {
		tz = "bot timezone"
	}
	if s.OneShot() {
		return "once at " + s.At.Format(time.RFC3339)
	}
	return fmt.Sprintf("%s (%s)", s.Schedule, tz)
}

// SpecFromConfig converts a config job.
func SpecFromConfig(c config.Job) (JobSpec, error) {
	s := JobSpec{Name: c.Name, Kind: c.Kind, Schedule: c.Schedule, Timezone: c.Timezone, Persona: c.Persona,
		Prompt: c.Prompt, Text: c.Text, DeliverTo: slices.Clone(c.DeliverTo), Misfire: c.Misfire, Grace: c.Grace}
	if c.At != "" {
		at, err := time.Parse(time.RFC3339, c.At)
		if err != nil {
			return JobSpec{}, fmt.Errorf("job %s: at %q is not an RFC 3339 time", c.Name, c.At)
		}
		s.At = at
	}
	if s.Kind == "" {
		s.Kind = KindTask
	}
	return s, nil
}

var jobNameRe = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// Validate checks a spec; loc is the bot's zone for the schedule check.
func (s JobSpec) Validate() error {
	if !jobNameRe.MatchString(s.Name) {
		return fmt.Errorf("job name %q must be 1-64 characters of a-z, 0-9, _ and -", s.Name)
	}
	switch s.Kind {
	case KindTask:
		if strings.TrimSpace(s.Prompt) == "" {
			return fmt.Errorf("job %s: a task needs a prompt", s.Name)
		}
	case KindReminder:
		if strings.TrimSpace(s.Text) == "" {
			return fmt.Errorf("job %s: a reminder needs text", s.Name)
		}
	default:
		return fmt.Errorf("job %s: kind %q must be task or reminder", s.Name, s.Kind)
	}
	loc, err := loadLocation(s.Timezone, time.UTC)
	if err != nil {
		return fmt.Errorf("job %s: %w", s.Name, err)
	}
	switch {
	case s.OneShot() && s.Schedule != "":
		return fmt.Errorf("job %s: set either a schedule or an at time, not both", s.Name)
	case !s.OneShot():
		if _, err := parseSchedule(s, loc); err != nil {
			return fmt.Errorf("job %s: %w", s.Name, err)
		}
	}
	if len(s.DeliverTo) == 0 {
		return fmt.Errorf("job %s: deliver_to is empty", s.Name)
	}
	for _, t := range s.DeliverTo {
		if err := config.CheckTarget(t); err != nil {
			return fmt.Errorf("job %s: deliver_to: %w", s.Name, err)
		}
	}
	switch s.Misfire {
	case "", MisfireSkip, MisfireRunOnce:
	default:
		return fmt.Errorf("job %s: misfire %q must be skip or run_once", s.Name, s.Misfire)
	}
	return nil
}

// jobState is a job's persisted scheduling state (KV "jobs/state/<name>").
type jobState struct {
	// Last is the scheduled time of the last occurrence handled (run, or
	// skipped); for a new recurring job, the moment it was first seen.
	Last     time.Time   `json:"last,omitzero"`
	Paused   bool        `json:"paused,omitempty"`
	Failures int         `json:"failures,omitempty"` // current failure streak
	Alerted  bool        `json:"alerted,omitempty"`  // the streak was reported
	Done     bool        `json:"done,omitempty"`     // one-shot finished, skipped or given up
	Attempts int         `json:"attempts,omitempty"` // one-shot attempts so far
	RetryAt  time.Time   `json:"retry_at,omitzero"`
	Pending  *pendingRun `json:"pending,omitempty"`
}

// pendingRun keeps a failed one-shot's answer and finished deliveries so a
// retry neither calls the model again nor repeats a delivered target.
type pendingRun struct {
	Text      string            `json:"text,omitempty"`
	Delivered map[string]string `json:"delivered,omitempty"` // target → platform ids
}

const kvJobState = "jobs/state/"

// JobInfo is a job as List shows it.
type JobInfo struct {
	Spec   JobSpec
	Source string // SourceConfig or SourceChat
	Paused bool
	// Done is set for a one-shot that ran, was skipped or gave up.
	Done bool
	// Next is the next scheduled run (zero if none).
	Next time.Time
	// Failures is the current failure streak.
	Failures int
	// LastRun is the newest run, if any.
	LastRun *memory.JobRun
}

// Errors returned by the job API (wrapped).
var (
	ErrNoSuchJob     = errors.New("no such job")
	ErrJobRunning    = errors.New("job is running")
	ErrConfigJob     = errors.New("job is defined in config.yaml")
	ErrJobNameInUse  = errors.New("job name is already in use")
	ErrJobFromJob    = errors.New("a scheduled job cannot create jobs")
	ErrTooManyJobs   = errors.New("too many jobs for this chat")
	errNotConfigured = errors.New("not configured")
)

// Jobs runs scheduled jobs. Safe for concurrent use.
type Jobs struct {
	o   Options
	log *slog.Logger

	mu       sync.Mutex
	cfgJobs  map[string]JobSpec
	running  map[string]bool
	onChange func() // the Scheduler re-syncs its cron entries
}

// NewJobs returns a Jobs for o.Jobs (config jobs) and the store's runtime jobs.
func NewJobs(o Options) (*Jobs, error) {
	if o.Store == nil {
		return nil, errors.New("jobs: no store")
	}
	o = o.withDefaults()
	j := &Jobs{o: o, log: o.Logger.With(slog.String("component", "jobs")), running: map[string]bool{}}
	if err := j.SetConfigJobs(o.Jobs); err != nil {
		return nil, err
	}
	return j, nil
}

// SetConfigJobs replaces the config-defined jobs (config reload). Their
// persisted state (last run, pause) is kept by name.
func (j *Jobs) SetConfigJobs(list []config.Job) error {
	m := map[string]JobSpec{}
	for _, c := range list {
		s, err := SpecFromConfig(c)
		if err != nil {
			return fmt.Errorf("jobs: %w", err)
		}
		if err := s.Validate(); err != nil {
			return fmt.Errorf("jobs: %w", err)
		}
		if _, dup := m[s.Name]; dup {
			return fmt.Errorf("jobs: job name %q is used twice", s.Name)
		}
		m[s.Name] = s
	}
	j.mu.Lock()
	j.cfgJobs = m
	fn := j.onChange
	j.mu.Unlock()
	if fn != nil {
		fn()
	}
	return nil
}

func (j *Jobs) changed() {
	j.mu.Lock()
	fn := j.onChange
	j.mu.Unlock()
	if fn != nil {
		fn()
	}
}

func (j *Jobs) location(s JobSpec) *time.Location {
	loc, err := loadLocation(s.Timezone, j.o.Location)
	if err != nil {
		return j.o.Location
	}
	return loc
}

// spec finds a job: config jobs first, then the store.
func (j *Jobs) spec(ctx context.Context, name string) (JobSpec, string, error) {
	j.mu.Lock()
	s, ok := j.cfgJobs[name]
	j.mu.Unlock()
	if ok {
		return s, SourceConfig, nil
	}
	rec, found, err := j.o.Store.GetJob(ctx, name)
	if err != nil {
		return JobSpec{}, "", fmt.Errorf("jobs: read %s: %w", name, err)
	}
	if !found {
		return JobSpec{}, "", fmt.Errorf("jobs: %q: %w", name, ErrNoSuchJob)
	}
	var rs JobSpec
	if err := json.Unmarshal(rec.Spec, &rs); err != nil {
		return JobSpec{}, "", fmt.Errorf("jobs: decode %s: %w", name, err)
	}
	rs.Name = rec.Name
	return rs, SourceChat, nil
}

type sourcedSpec struct {
	JobSpec
	source string
}

// all returns every job, ordered by name; a config job shadows a stored job
// of the same name.
func (j *Jobs) all(ctx context.Context) ([]sourcedSpec, error) {
	recs, err := j.o.Store.ListJobs(ctx)
	if err != nil {
		return nil, fmt.Errorf("jobs: list: %w", err)
	}
	j.mu.Lock()
	out := make([]sourcedSpec, 0, len(j.cfgJobs)+len(recs))
	for _, s := range j.cfgJobs {
		out = append(out, sourcedSpec{s, SourceConfig})
	}
	cfg := j.cfgJobs
	j.mu.Unlock()
	for _, r := range recs {
		if _, shadowed := cfg[r.Name]; shadowed {
			j.log.Warn("a stored job has the name of a config job; the config job wins", slog.String("job", r.Name))
			continue
		}
		var s JobSpec
		if err := json.Unmarshal(r.Spec, &s); err != nil {
			j.log.Error("stored job unreadable; ignored", slog.String("job", r.Name), slog.String("error", err.Error()))
			continue
		}
		s.Name = r.Name
		out = append(out, sourcedSpec{s, SourceChat})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}

func (j *Jobs) loadState(ctx context.Context, name string) (jobState, bool, error) {
	v, found, err := j.o.Store.KVGet(ctx, kvJobState+name)
	if err != nil || !found {
		return jobState{}, false, err
	}
	var st jobState
	if err := json.Unmarshal(v, &st); err != nil {
		j.log.Warn("job state unreadable; starting afresh", slog.String("job", name), slog.String("error", err.Error()))
		return jobState{}, false, nil
	}
	return st, true, nil
}

func (j *Jobs) saveState(ctx context.Context, name string, st jobState) error {
	v, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := j.o.Store.KVPut(ctx, kvJobState+name, v); err != nil {
		return fmt.Errorf("jobs: save state of %s: %w", name, err)
	}
	return nil
}

// lock marks name running; false if it already is.
func (j *Jobs) lock(name string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.running[name] {
		return false
	}
	j.running[name] = true
	return true
}

func (j *Jobs) unlock(name string) {
	j.mu.Lock()
	delete(j.running, name)
	j.mu.Unlock()
}

// Tick runs every job that is due at now (see the package doc for the
// misfire rules). Jobs run one after another; a job already running is left
// alone.
func (j *Jobs) Tick(ctx context.Context, now time.Time) error {
	specs, err := j.all(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range specs {
		if ctx.Err() != nil {
			break
		}
		if err := j.tickOne(ctx, s.JobSpec, s.source, now); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// TickJob runs job name if it is due at now (the cron entry of one job).
func (j *Jobs) TickJob(ctx context.Context, name string, now time.Time) error {
	s, src, err := j.spec(ctx, name)
	if err != nil {
		return err
	}
	return j.tickOne(ctx, s, src, now)
}

func (j *Jobs) tickOne(ctx context.Context, s JobSpec, source string, now time.Time) error {
	if !j.lock(s.Name) {
		return nil
	}
	defer j.unlock(s.Name)
	st, found, err := j.loadState(ctx, s.Name)
	if err != nil {
		return fmt.Errorf("jobs: %s: %w", s.Name, err)
	}
	if st.Paused || st.Done {
		return nil
	}
	log := j.log.With(slog.String("job", s.Name))
	if s.OneShot() {
		if now.Before(s.At) || now.Before(st.RetryAt) {
			return nil
		}
		if st.Attempts == 0 && now.Sub(s.At) > s.grace() && s.Misfire != MisfireRunOnce {
			st.Done = true
			log.Warn("one-shot job missed while the daemon was down; skipped (misfire skip)", slog.Time("at", s.At))
			return errors.Join(j.recordSkipped(ctx, s, s.At, 1, now), j.saveState(ctx, s.Name, st))
		}
		_, err := j.execute(ctx, s, source, st, s.At, now, false)
		return err
	}
	sched, err := parseSchedule(s, j.location(s))
	if err != nil {
		return fmt.Errorf("jobs: %s: %w", s.Name, err)
	}
	if !found || st.Last.IsZero() {
		// First sighting: nothing before now is caught up.
		st.Last = now
		return j.saveState(ctx, s.Name, st)
	}
	latest, n := occurrences(sched, st.Last, now)
	if n == 0 {
		return nil
	}
	// Persist the handled occurrence first: a crash mid-run must not repeat it.
	st.Last = latest
	if err := j.saveState(ctx, s.Name, st); err != nil {
		return err
	}
	late := now.Sub(latest)
	switch {
	case late <= s.grace():
		if n > 1 {
			log.Warn("earlier runs were missed; running the latest only", slog.Int("missed", n-1))
		}
	case s.Misfire == MisfireRunOnce:
		log.Warn("runs were missed while the daemon was down; running once now (misfire run_once)",
			slog.Int("missed", n), slog.Time("latest", latest))
	default:
		log.Warn("runs were missed while the daemon was down; skipped (misfire skip)",
			slog.Int("missed", n), slog.Time("latest", latest))
		return j.recordSkipped(ctx, s, latest, n, now)
	}
	_, err = j.execute(ctx, s, source, st, latest, now, false)
	return err
}

func (j *Jobs) recordSkipped(ctx context.Context, s JobSpec, latest time.Time, n int, now time.Time) error {
	msg := fmt.Sprintf("missed %d scheduled run(s), the latest at %s, while the daemon was down; misfire policy skip",
		n, latest.In(j.location(s)).Format("2006-01-02 15:04 MST"))
	_, err := j.o.Store.AddRun(ctx, memory.JobRun{Job: s.Name, Scheduled: latest, Started: now, Finished: now,
		Status: RunSkipped, Error: msg})
	if err != nil {
		return fmt.Errorf("jobs: record skipped run of %s: %w", s.Name, err)
	}
	return nil
}

// execute runs one occurrence of s (the caller holds the job's lock) and
// records it. manual runs (RunNow) do not touch the one-shot retry state.
func (j *Jobs) execute(ctx context.Context, s JobSpec, source string, st jobState, scheduled, now time.Time, manual bool) (memory.JobRun, error) {
	log := j.log.With(slog.String("job", s.Name))
	run := memory.JobRun{Job: s.Name, Scheduled: scheduled, Started: now, Status: RunRunning}
	id, err := j.o.Store.AddRun(ctx, run)
	if err != nil {
		return run, fmt.Errorf("jobs: record run of %s: %w", s.Name, err)
	}
	run.ID = id

	pending := st.Pending
	if manual || pending == nil {
		pending = &pendingRun{}
	}
	text, execErr := pending.Text, error(nil)
	var mark uint64
	if text == "" {
		mark = j.o.Sent.Mark()
		text, execErr = j.produce(ctx, s)
	}
	var errs []string
	delivered := 0
	if execErr != nil {
		errs = append(errs, execErr.Error())
	} else {
		pending.Text = text
		if pending.Delivered == nil {
			pending.Delivered = map[string]string{}
		}
		for _, target := range s.DeliverTo {
			ds := j.deliverOne(ctx, s, target, text, scheduled, mark, pending.Delivered)
			run.Deliveries = append(run.Deliveries, ds)
			switch ds.Status {
			case DeliveryDelivered:
				pending.Delivered[target] = ds.PlatformID
				delivered++
			case DeliverySkipped:
				delivered++
			default:
				errs = append(errs, target+": "+ds.Error)
			}
		}
	}
	switch {
	case execErr != nil || delivered == 0:
		run.Status = RunFailed
	case delivered < len(s.DeliverTo):
		run.Status = RunPartial
	default:
		run.Status = RunOK
	}
	run.Error = strings.Join(errs, "; ")
	run.Finished = j.o.Now()
	if j.o.OnRun != nil {
		j.o.OnRun("job", run.Status)
	}
	var outErr []error
	if err := j.o.Store.UpdateRun(context.WithoutCancel(ctx), run); err != nil {
		outErr = append(outErr, fmt.Errorf("jobs: record run of %s: %w", s.Name, err))
	}

	// Reload: Pause/Resume may have changed the state during the run.
	if cur, found, err := j.loadState(ctx, s.Name); err == nil && found {
		cur.Last = st.Last
		st = cur
	}
	if run.Status == RunOK {
		st.Failures, st.Alerted = 0, false
	} else {
		st.Failures++
		log.Warn("job run failed", slog.String("status", run.Status), slog.String("error", run.Error))
		if st.Failures >= j.o.AlertAfter && !st.Alerted {
			st.Alerted = true
			j.alert(ctx, fmt.Sprintf("Job %q has failed %d times in a row. Last error: %s", s.Name, st.Failures, run.Error))
		}
	}
	if s.OneShot() {
		switch {
		case run.Status == RunOK && source == SourceChat:
			if err := j.o.Store.DeleteJob(context.WithoutCancel(ctx), s.Name); err != nil && !errors.Is(err, memory.ErrNotFound) {
				outErr = append(outErr, fmt.Errorf("jobs: remove finished one-shot %s: %w", s.Name, err))
			}
			if err := j.o.Store.KVDelete(context.WithoutCancel(ctx), kvJobState+s.Name); err != nil {
				outErr = append(outErr, fmt.Errorf("jobs: remove state of %s: %w", s.Name, err))
			}
			j.changed()
			log.Info("one-shot job done and removed")
			return run, errors.Join(outErr...)
		case run.Status == RunOK:
			st.Done, st.Pending, st.Attempts = true, nil, st.Attempts+1
		case !manual:
			st.Attempts++
			st.Pending = pending
			if st.Attempts >= j.o.MaxAttempts {
				st.Done = true
				log.Error("one-shot job gave up", slog.Int("attempts", st.Attempts))
			} else {
				st.RetryAt = now.Add(j.o.RetryDelay)
			}
		}
	}
	if err := j.saveState(context.WithoutCancel(ctx), s.Name, st); err != nil {
		outErr = append(outErr, err)
	}
	log.Info("job ran", slog.String("status", run.Status), slog.Time("scheduled", scheduled))
	return run, errors.Join(outErr...)
}

// produce computes the text to deliver.
func (j *Jobs) produce(ctx context.Context, s JobSpec) (string, error) {
	if s.Kind == KindReminder {
		return s.Text, nil
	}
	if j.o.Agent == nil {
		return "", fmt.Errorf("run task: agent %w", errNotConfigured)
	}
	ans, err := j.o.Agent.ProcessDirect(ctx, "job:"+s.Name, s.Prompt, agent.DirectOptions{
		Persona: s.Persona, Tools: s.Tools, JobName: s.Name, DeliverTo: slices.Clone(s.DeliverTo),
		Runtime: agent.Runtime{ChatType: "job"},
	})
	if err != nil {
		return "", fmt.Errorf("run task: %w", err)
	}
	if strings.TrimSpace(ans) == "" {
		return "", errors.New("run task: the model returned an empty answer")
	}
	return ans, nil
}

func (j *Jobs) deliverOne(ctx context.Context, s JobSpec, target, text string, scheduled time.Time, mark uint64, done map[string]string) memory.DeliveryStatus {
	ds := memory.DeliveryStatus{Target: target}
	if id, ok := done[target]; ok {
		ds.Status, ds.PlatformID = DeliveryDelivered, id
		return ds
	}
	if isStatusToken(text) {
		ds.Status, ds.Error = DeliverySkipped, "the answer was a status token; nothing to deliver"
		return ds
	}
	if s.Kind == KindTask {
		for _, e := range j.o.Sent.Since("job:"+s.Name, mark) {
			if e.Target == target && sameText(e.Text, text) {
				ds.Status, ds.PlatformID = DeliveryDelivered, strings.Join(e.MessageIDs, ",")
				return ds
			}
		}
	}
	tgt, ok := channels.ParseTarget(target)
	if !ok {
		ds.Status, ds.Error = DeliveryFailed, fmt.Sprintf("%q is not a target", target)
		return ds
	}
	if j.o.Out == nil {
		ds.Status, ds.Error = DeliveryFailed, "no outbound path configured"
		return ds
	}
	turnID := fmt.Sprintf("job-%s-%d-%s", s.Name, scheduled.Unix(), target)
	ids, err := j.o.Out.Deliver(ctx, tgt, turnID, text)
	switch {
	case err != nil:
		ds.Status, ds.Error = DeliveryFailed, err.Error()
	case len(ids) == 0:
		ds.Status, ds.Error = DeliveryFailed, "the platform returned no message id"
	default:
		ds.Status, ds.PlatformID = DeliveryDelivered, strings.Join(ids, ",")
	}
	return ds
}

func (j *Jobs) alert(ctx context.Context, text string) {
	j.log.Error("alerting the admins", slog.String("alert", text))
	if j.o.Alert != nil {
		j.o.Alert(ctx, text)
	}
}

// Create stores a runtime job (the schedule tool). Its first run is the first
// occurrence after now.
func (j *Jobs) Create(ctx context.Context, s JobSpec) error {
	if err := s.Validate(); err != nil {
		return err
	}
	j.mu.Lock()
	_, isCfg := j.cfgJobs[s.Name]
	j.mu.Unlock()
	if isCfg {
		return fmt.Errorf("jobs: %q: %w (by config.yaml)", s.Name, ErrJobNameInUse)
	}
	if _, found, err := j.o.Store.GetJob(ctx, s.Name); err != nil {
		return fmt.Errorf("jobs: %w", err)
	} else if found {
		return fmt.Errorf("jobs: %q: %w", s.Name, ErrJobNameInUse)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := j.saveState(ctx, s.Name, jobState{Last: j.o.Now()}); err != nil {
		return err
	}
	if err := j.o.Store.PutJob(ctx, memory.JobRecord{Name: s.Name, Spec: raw}); err != nil {
		return fmt.Errorf("jobs: store %s: %w", s.Name, err)
	}
	j.log.Info("job created", slog.String("job", s.Name), slog.String("when", s.When()), slog.String("by", s.CreatedBy))
	j.changed()
	return nil
}

// List returns every job with its next run time, ordered by name.
func (j *Jobs) List(ctx context.Context) ([]JobInfo, error) {
	specs, err := j.all(ctx)
	if err != nil {
		return nil, err
	}
	now := j.o.Now()
	out := make([]JobInfo, 0, len(specs))
	for _, s := range specs {
		info, err := j.info(ctx, s.JobSpec, s.source, now)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// Get returns one job.
func (j *Jobs) Get(ctx context.Context, name string) (JobInfo, error) {
	s, src, err := j.spec(ctx, name)
	if err != nil {
		return JobInfo{}, err
	}
	return j.info(ctx, s, src, j.o.Now())
}

func (j *Jobs) info(ctx context.Context, s JobSpec, src string, now time.Time) (JobInfo, error) {
	st, _, err := j.loadState(ctx, s.Name)
	if err != nil {
		return JobInfo{}, fmt.Errorf("jobs: %s: %w", s.Name, err)
	}
	info := JobInfo{Spec: s, Source: src, Paused: st.Paused, Done: st.Done, Failures: st.Failures}
	if next := j.nextRuns(s, st, now, 1); len(next) > 0 && !st.Paused {
		info.Next = next[0]
	}
	runs, err := j.o.Store.ListRuns(ctx, s.Name, 1)
	if err != nil {
		return JobInfo{}, fmt.Errorf("jobs: runs of %s: %w", s.Name, err)
	}
	if len(runs) > 0 {
		info.LastRun = &runs[0]
	}
	return info, nil
}

func (j *Jobs) nextRuns(s JobSpec, st jobState, now time.Time, n int) []time.Time {
	if st.Done {
		return nil
	}
	if s.OneShot() {
		at := s.At
		if st.RetryAt.After(at) {
			at = st.RetryAt
		}
		if at.Before(now) {
			at = now
		}
		return []time.Time{at}
	}
	sched, err := parseSchedule(s, j.location(s))
	if err != nil {
		return nil
	}
	var out []time.Time
	cur := now
	if st.Last.After(cur) {
		cur = st.Last
	}
	for range n {
		cur = sched.Next(cur)
		if cur.IsZero() {
			break
		}
		out = append(out, cur.In(j.location(s)))
	}
	return out
}

// NextRuns returns the next n scheduled times of job name (in its zone).
func (j *Jobs) NextRuns(ctx context.Context, name string, n int) ([]time.Time, error) {
	s, _, err := j.spec(ctx, name)
	if err != nil {
		return nil, err
	}
	st, _, err := j.loadState(ctx, name)
	if err != nil {
		return nil, err
	}
	return j.nextRuns(s, st, j.o.Now(), n), nil
}

// Runs returns the run history of job name, newest first.
func (j *Jobs) Runs(ctx context.Context, name string, limit int) ([]memory.JobRun, error) {
	return j.o.Store.ListRuns(ctx, name, limit)
}

// RunNow runs job name immediately, whatever its schedule and pause state,
// and returns the recorded run. A one-shot that succeeds is done (a runtime
// one is removed).
func (j *Jobs) RunNow(ctx context.Context, name string) (memory.JobRun, error) {
	s, src, err := j.spec(ctx, name)
	if err != nil {
		return memory.JobRun{}, err
	}
	if !j.lock(name) {
		return memory.JobRun{}, fmt.Errorf("jobs: %s: %w", name, ErrJobRunning)
	}
	defer j.unlock(name)
	st, _, err := j.loadState(ctx, name)
	if err != nil {
		return memory.JobRun{}, err
	}
	now := j.o.Now()
	return j.execute(ctx, s, src, st, now, now, true)
}

// Pause stops scheduled runs of job name until Resume.
func (j *Jobs) Pause(ctx context.Context, name string) error {
	return j.setPaused(ctx, name, true)
}

// Resume restarts scheduled runs of job name; runs missed while paused are
// not caught up.
func (j *Jobs) Resume(ctx context.Context, name string) error {
	return j.setPaused(ctx, name, false)
}

func (j *Jobs) setPaused(ctx context.Context, name string, paused bool) error {
	if _, _, err := j.spec(ctx, name); err != nil {
		return err
	}
	st, _, err := j.loadState(ctx, name)
	if err != nil {
		return err
	}
	if st.Paused == paused {
		return nil
	}
	st.Paused = paused
	if !paused {
		st.Last = j.o.Now()
	}
	if err := j.saveState(ctx, name, st); err != nil {
		return err
	}
	j.log.Info("job paused state changed", slog.String("job", name), slog.Bool("paused", paused))
	return nil
}

// Delete removes a runtime job with its history and state. Config jobs are
// removed by editing config.yaml.
func (j *Jobs) Delete(ctx context.Context, name string) error {
	_, src, err := j.spec(ctx, name)
	if err != nil {
		return err
	}
	if src == SourceConfig {
		return fmt.Errorf("jobs: %q: %w; remove it there", name, ErrConfigJob)
	}
	if err := j.o.Store.DeleteJob(ctx, name); err != nil {
		return fmt.Errorf("jobs: delete %s: %w", name, err)
	}
	if err := j.o.Store.KVDelete(ctx, kvJobState+name); err != nil {
		return fmt.Errorf("jobs: delete state of %s: %w", name, err)
	}
	j.log.Info("job deleted", slog.String("job", name))
	j.changed()
	return nil
}

// schedules returns the cron schedule of every job that can still run (for
// the Scheduler's entries).
func (j *Jobs) schedules(ctx context.Context) (map[string]cronSchedule, error) {
	specs, err := j.all(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]cronSchedule{}
	for _, s := range specs {
		sched, err := parseSchedule(s.JobSpec, j.location(s.JobSpec))
		if err != nil {
			j.log.Error("job schedule unusable", slog.String("job", s.Name), slog.String("error", err.Error()))
			continue
		}
		out[s.Name] = sched
	}
	return out, nil
}
