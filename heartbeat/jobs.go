package heartbeat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/heartbeat/schedule"
	"github.com/switchboard-bot/switchboard/memory"
)

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

	// createMu serializes the schedule tool's quota check and create.
	createMu sync.Mutex

	mu       sync.Mutex
	cfgJobs  map[string]JobSpec
	running  map[string]bool
	checked  map[string]bool // jobs looked at for interrupted runs (interrupted)
	added    map[string]bool // config jobs a reload added (takeAdded)
	onChange func()          // the Scheduler re-syncs its cron entries
}

// NewJobs returns a Jobs for o.Jobs (config jobs) and the store's runtime jobs.
func NewJobs(o Options) (*Jobs, error) {
	if o.Store == nil {
		return nil, errors.New("jobs: no store")
	}
	o = o.withDefaults()
	j := &Jobs{o: o, log: o.Logger.With(slog.String("component", "jobs")), running: map[string]bool{}, checked: map[string]bool{}, added: map[string]bool{}}
	if err := j.SetConfigJobs(o.Jobs); err != nil {
		return nil, err
	}
	return j, nil
}

// SetConfigJobs replaces the config-defined jobs (config reload). Their
// persisted state (last run, pause) is kept by name; a job a reload adds
// (back) starts afresh, as does one whose schedule or zone changed.
func (j *Jobs) SetConfigJobs(list []JobSpec) error {
	m := map[string]JobSpec{}
	for _, s := range list {
		s.DeliverTo = slices.Clone(s.DeliverTo)
		if s.Kind == "" {
			s.Kind = KindTask
		}
		if err := s.Validate(j.o.Channels); err != nil {
			return fmt.Errorf("jobs: %w", err)
		}
		if _, dup := m[s.Name]; dup {
			return fmt.Errorf("jobs: job name %q is used twice", s.Name)
		}
		m[s.Name] = s
	}
	j.mu.Lock()
	if j.cfgJobs != nil { // a reload, not the start
		for name := range m {
			if _, had := j.cfgJobs[name]; !had {
				j.added[name] = true
			}
		}
	}
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
	if j.o.OnJobsChange != nil {
		j.o.OnJobsChange()
	}
}

// takeAdded reports (once) whether a reload added config job name.
func (j *Jobs) takeAdded(name string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	added := j.added[name]
	delete(j.added, name)
	return added
}

// scheduleKey is what a job's persisted state depends on: a recurring
// job's spec and the zone it runs in, a one-shot's time.
func (j *Jobs) scheduleKey(s JobSpec) string {
	if s.OneShot() {
		return "at " + s.At.UTC().Format(time.RFC3339Nano)
	}
	return s.Schedule + " | " + j.location(s).String()
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

// Create stores a runtime job (the schedule tool, the web console). Its first
// run is the first occurrence after now. A one-shot more than
// schedule.MaxOneShotYears ahead is refused.
func (j *Jobs) Create(ctx context.Context, s JobSpec) error {
	if err := s.Validate(j.o.Channels); err != nil {
		return err
	}
	if s.OneShot() {
		if err := schedule.CheckOneShot(s.At, j.o.Now()); err != nil {
			return fmt.Errorf("job %s: at %w", s.Name, err)
		}
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
	if err := j.saveState(ctx, s.Name, jobState{Last: j.o.Now(), Spec: j.scheduleKey(s)}); err != nil {
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
