package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/memory"
)

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
	log := j.log.With(slog.String("job", s.Name))
	resume, err := j.interrupted(ctx, s.Name, log)
	if err != nil {
		return fmt.Errorf("jobs: %s: %w", s.Name, err)
	}
	key := j.scheduleKey(s)
	if !found {
		st.Spec = key // saved with the job's first state
	} else if st.Spec != key {
		if st.Spec != "" {
			// config.yaml gave the job another schedule, zone or at time:
			// a new job under the old name (its pause kept), so an edited
			// one-shot is not left "done" and nothing is caught up.
			st, resume = jobState{Paused: st.Paused}, time.Time{}
			log.Info("job schedule changed; starting afresh", slog.String("schedule", key))
		}
		st.Spec = key
		if err := j.saveState(ctx, s.Name, st); err != nil {
			return err
		}
	}
	if st.Paused || st.Done {
		return nil
	}
	if s.OneShot() {
		return j.tickOneShot(ctx, s, source, st, now, log)
	}
	return j.tickRecurring(ctx, s, source, st, found, resume, now, log)
}

// tickOneShot runs a one-shot job whose time has come, once.
func (j *Jobs) tickOneShot(ctx context.Context, s JobSpec, source string, st jobState, now time.Time, log *slog.Logger) error {
	if now.Before(s.At) || now.Before(st.RetryAt) {
		return nil
	}
	if ok, err := j.claimOneShot(ctx, s, st, log); !ok {
		return err
	}
	if st.Attempts == 0 && now.Sub(s.At) > s.grace() && s.Misfire != MisfireRunOnce {
		st.Done = true
		log.Warn("one-shot job missed while the daemon was down; skipped (misfire skip)", slog.Time("at", s.At))
		return errors.Join(j.recordSkipped(ctx, s, s.At, 1, now), j.saveState(ctx, s.Name, st))
	}
	_, err := j.execute(ctx, s, source, st, s.At, now, false)
	return err
}

// tickRecurring runs the latest due occurrence of a recurring job (or the
// interrupted one resume names) under the misfire rules.
func (j *Jobs) tickRecurring(ctx context.Context, s JobSpec, source string, st jobState, found bool, resume, now time.Time, log *slog.Logger) error {
	sched, err := parseSchedule(s, j.location(s))
	if err != nil {
		return fmt.Errorf("jobs: %s: %w", s.Name, err)
	}
	if !found || st.Last.IsZero() || j.takeAdded(s.Name) {
		// First sighting, or a job config.yaml added back: nothing before
		// now is caught up (it was not downtime).
		st.Last = now
		return j.saveState(ctx, s.Name, st)
	}
	latest, n := occurrences(sched, st.Last, now)
	switch {
	case n > 0:
		mine, err := j.o.claim(ctx, log, s.Name, latest)
		if err != nil {
			return fmt.Errorf("jobs: %s: %w", s.Name, err)
		}
		// Persist the handled occurrence first: a crash mid-run is resumed
		// once (interrupted), never run from the start of the schedule.
		st.Last = latest
		if err := j.saveState(ctx, s.Name, st); err != nil || !mine {
			return err
		}
	case !resume.IsZero() && resume.Equal(st.Last):
		// The latest occurrence's run was interrupted and nothing newer
		// is due: run it again. Its deliveries keep their outbox key, so
		// a chunk the platform confirmed is not sent twice.
		latest, n = resume, 1
		log.Warn("the last run was interrupted (the daemon stopped during it); running it again", slog.Time("scheduled", latest))
	default:
		return nil
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

// RunInterrupted is the error recorded for a run a stopped daemon left
// unfinished; the next process (or leader) runs that occurrence again once.
const RunInterrupted = "interrupted: the daemon stopped during this run"

// interrupted looks, at the first tick of job name since the scheduler
// started, for a run a previous process left "running" (killed before or
// during its delivery): it records it as failed and returns its scheduled
// time, for tickOne to run it again. A resumed run that is interrupted too
// is not resumed again (a job that kills the daemon must not keep it in a
// crash loop).
func (j *Jobs) interrupted(ctx context.Context, name string, log *slog.Logger) (time.Time, error) {
	j.mu.Lock()
	seen := j.checked[name]
	j.mu.Unlock()
	if seen {
		return time.Time{}, nil
	}
	runs, err := j.o.Store.ListRuns(ctx, name, 2)
	if err != nil {
		return time.Time{}, fmt.Errorf("read last runs: %w", err)
	}
	var resume time.Time
	if len(runs) > 0 && runs[0].Status == RunRunning {
		run := runs[0]
		run.Status, run.Error, run.Finished = RunFailed, RunInterrupted, j.o.Now()
		if err := j.o.Store.UpdateRun(ctx, run); err != nil {
			return time.Time{}, fmt.Errorf("record interrupted run: %w", err)
		}
		resume = run.Scheduled
		if len(runs) > 1 && runs[1].Error == RunInterrupted && runs[1].Scheduled.Equal(resume) {
			resume = time.Time{}
			log.Error("a run was interrupted twice; not running it again", slog.Time("scheduled", run.Scheduled))
		} else {
			log.Warn("found a run interrupted by a stop of the daemon", slog.Time("scheduled", run.Scheduled))
		}
	}
	j.mu.Lock()
	j.checked[name] = true
	j.mu.Unlock()
	return resume, nil
}

// recheckInterrupted makes the next tick of every job look for interrupted
// runs again (Scheduler.Start: a new process, or a new leadership).
func (j *Jobs) recheckInterrupted() {
	j.mu.Lock()
	clear(j.checked)
	j.mu.Unlock()
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
	j.produceAndDeliver(ctx, s, scheduled, pending, &run)
	run.Finished = j.o.Now()
	if j.o.OnRun != nil {
		j.o.OnRun("job", run.Status)
	}
	var outErr []error
	if err := j.o.Store.UpdateRun(context.WithoutCancel(ctx), run); err != nil {
		outErr = append(outErr, fmt.Errorf("jobs: record run of %s: %w", s.Name, err))
	}
	if err := j.settle(ctx, s, source, st, run, pending, now, manual); err != nil {
		outErr = append(outErr, err)
	}
	return run, errors.Join(outErr...)
}

// produceAndDeliver computes the text (or reuses a failed one-shot's
// stored answer), delivers it to every target not yet delivered and sets
// the run's deliveries, status and error.
func (j *Jobs) produceAndDeliver(ctx context.Context, s JobSpec, scheduled time.Time, pending *pendingRun, run *memory.JobRun) {
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
	case agent.IsBudget(execErr):
		// llm.budget refused the model call: a skip, not a failure (no
		// alert, no failure streak); the reason says when it resets.
		run.Status = RunSkipped
	case execErr != nil || delivered == 0:
		run.Status = RunFailed
	case delivered < len(s.DeliverTo):
		run.Status = RunPartial
	default:
		run.Status = RunOK
	}
	run.Error = strings.Join(errs, "; ")
}

// settle updates the job's state after a run: the failure streak (and the
// admins' alert), and for a one-shot its completion, removal or retry.
func (j *Jobs) settle(ctx context.Context, s JobSpec, source string, st jobState, run memory.JobRun, pending *pendingRun, now time.Time, manual bool) error {
	log := j.log.With(slog.String("job", s.Name))
	// Reload: Pause/Resume may have changed the state during the run.
	if cur, found, err := j.loadState(ctx, s.Name); err == nil && found {
		cur.Last = st.Last
		st = cur
	}
	if run.Status == RunOK {
		st.Failures, st.Alerted = 0, false
	} else if run.Status != RunSkipped {
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
			return j.removeFinished(ctx, s.Name, log)
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
	err := j.saveState(context.WithoutCancel(ctx), s.Name, st)
	log.Info("job ran", slog.String("status", run.Status), slog.Time("scheduled", run.Scheduled))
	return err
}

// removeFinished deletes a runtime one-shot that succeeded, with its state.
func (j *Jobs) removeFinished(ctx context.Context, name string, log *slog.Logger) error {
	var errs []error
	if err := j.o.Store.DeleteJob(context.WithoutCancel(ctx), name); err != nil && !errors.Is(err, memory.ErrNotFound) {
		errs = append(errs, fmt.Errorf("jobs: remove finished one-shot %s: %w", name, err))
	}
	if err := j.o.Store.KVDelete(context.WithoutCancel(ctx), kvJobState+name); err != nil {
		errs = append(errs, fmt.Errorf("jobs: remove state of %s: %w", name, err))
	}
	j.changed()
	log.Info("one-shot job done and removed")
	return errors.Join(errs...)
}

// produce computes the text to deliver.
func (j *Jobs) produce(ctx context.Context, s JobSpec) (string, error) {
	if s.Kind == KindReminder {
		return s.Text, nil
	}
	if j.o.Agent == nil {
		return "", fmt.Errorf("run task: agent %w", errNotConfigured)
	}
	ctx = agent.WithPreapproved(ctx, s.Approve) // a job never waits for /approve
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
	// A task's answer may be a model's status token; a reminder's text is
	// a person's, delivered as written ("PAY RENT" is no token).
	if s.Kind == KindTask && isStatusToken(text) {
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
	dctx := ctx
	if s.Kind == KindReminder { // a platform with a messaging window may use a reminder template
		dctx = channels.WithPurpose(ctx, channels.PurposeReminder)
	}
	ids, err := j.o.Out.Deliver(dctx, tgt, turnID, text)
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
